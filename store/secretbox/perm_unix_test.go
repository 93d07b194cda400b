//go:build unix

package secretbox

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestKeyFileModeChecked(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, KeySize))
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o600, true},
		{0o400, true},
		{0o644, false},
		{0o640, false},
		{0o604, false},
		{0o666, false},
	} {
		t.Run(c.mode.String(), func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			path := filepath.Join(dir, KeyFileName)
			is.NoErr(os.WriteFile(path, []byte(key+"\n"), 0o600))
			is.NoErr(os.Chmod(path, c.mode)) // not subject to the umask
			kr := newFakeKeyring()
			b, err := Open(context.Background(), dir, Options{Keyring: kr, Logger: quietLogger()})
			if c.ok {
				is.NoErr(err)
				is.Equal(b.Source(), SourceFile)
				return
			}
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), "chmod 600")) // says how to fix it
			is.True(!strings.Contains(err.Error(), key))
			is.Equal(kr.gets+kr.sets, 0) // refused outright, no keychain key minted
		})
	}
}
