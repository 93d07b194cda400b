package secretbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/zalando/go-keyring"
)

var errNoKeychain = errors.New("dbus: org.freedesktop.secrets not provided")

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func readStoredFileKey(t *testing.T, dir string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	key, err := decodeKey(string(data))
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestKeychainKeyCreatedAndReused(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	kr := newFakeKeyring()
	first := openBox(t, dir, Options{Keyring: kr})
	is.Equal(first.Source(), SourceKeychain)
	is.Equal(kr.sets, 1)
	is.True(!exists(filepath.Join(dir, KeyFileName)))

	// The entry is under the shared service and a user derived from the path.
	canon, err := filepath.EvalSymlinks(dir)
	is.NoErr(err)
	user := userFor(canon)
	stored, ok := kr.entries[KeychainService+"/"+user]
	is.True(ok)
	_, err = decodeKey(stored)
	is.NoErr(err)
	marker, err := os.ReadFile(filepath.Join(dir, MarkerFileName))
	is.NoErr(err)
	is.Equal(strings.TrimSpace(string(marker)), user)

	second := openBox(t, dir, Options{Keyring: kr})
	is.Equal(second.Source(), SourceKeychain)
	is.Equal(kr.sets, 1) // reused, not replaced
	is.True(sameKey(t, first, second))

	// Another data directory gets its own key.
	other := openBox(t, t.TempDir(), Options{Keyring: kr})
	is.Equal(kr.sets, 2)
	is.True(!sameKey(t, first, other))
}

func TestSameDirectoryThroughSymlinkSharesKey(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	is.NoErr(os.Mkdir(dir, 0o700))
	link := filepath.Join(root, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	kr := newFakeKeyring()
	a := openBox(t, dir, Options{Keyring: kr})
	// Remove the marker so the user must be derived again, from the link.
	is.NoErr(os.Remove(filepath.Join(dir, MarkerFileName)))
	b := openBox(t, link, Options{Keyring: kr})
	is.Equal(kr.sets, 1)
	is.True(sameKey(t, a, b))
	is.True(exists(filepath.Join(dir, MarkerFileName))) // restored on a keychain hit
}

func TestMovedDirectoryKeepsKeychainKey(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	oldDir := filepath.Join(root, "old")
	is.NoErr(os.Mkdir(oldDir, 0o700))
	kr := newFakeKeyring()
	a := openBox(t, oldDir, Options{Keyring: kr})
	newDir := filepath.Join(root, "new")
	is.NoErr(os.Rename(oldDir, newDir))
	b := openBox(t, newDir, Options{Keyring: kr})
	is.Equal(kr.sets, 1) // the marker names the original entry
	is.True(sameKey(t, a, b))
}

func TestFallbackToFileWhenKeyringErrors(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	kr := newFakeKeyring()
	kr.getErr = errNoKeychain
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))

	a := openBox(t, dir, Options{Keyring: kr, Logger: logger})
	is.Equal(a.Source(), SourceFile)
	is.Equal(kr.sets, 0)
	is.True(!exists(filepath.Join(dir, MarkerFileName)))
	fi, err := os.Stat(filepath.Join(dir, KeyFileName))
	is.NoErr(err)
	if runtime.GOOS != "windows" {
		is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	}
	is.Equal(strings.Count(logs.String(), "level=WARN"), 1) // logged once
	is.True(strings.Contains(logs.String(), errNoKeychain.Error()))
	is.True(strings.Contains(logs.String(), KeyFileName))

	b := openBox(t, dir, Options{Keyring: kr})
	is.Equal(b.Source(), SourceFile)
	is.True(sameKey(t, a, b))

	// The keychain comes back: the file still wins, no new key is minted.
	kr.set(func(k *fakeKeyring) { k.getErr = nil })
	getsBefore := kr.gets
	c := openBox(t, dir, Options{Keyring: kr})
	is.Equal(c.Source(), SourceFile)
	is.True(sameKey(t, a, c))
	is.Equal(kr.sets, 0)
	is.Equal(kr.gets, getsBefore) // the keychain is not even asked
}

func TestFallbackToFileWhenKeyringRefusesWrites(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	kr := newFakeKeyring()
	kr.setErr = errors.New("keychain locked")
	b := openBox(t, dir, Options{Keyring: kr})
	is.Equal(b.Source(), SourceFile)
	is.True(exists(filepath.Join(dir, KeyFileName)))
	is.True(!exists(filepath.Join(dir, MarkerFileName)))
}

func TestDisableKeyring(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	kr := newFakeKeyring()
	a := openBox(t, dir, Options{Keyring: kr, DisableKeyring: true})
	is.Equal(a.Source(), SourceFile)
	is.Equal(kr.gets+kr.sets, 0)
	b := openBox(t, dir, Options{Keyring: kr}) // file present: used even with the keychain on
	is.Equal(b.Source(), SourceFile)
	is.Equal(kr.gets+kr.sets, 0)
	is.True(sameKey(t, a, b))
}

func TestKeychainKeyIsNotReplacedDuringOutage(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	kr := newFakeKeyring()
	openBox(t, dir, Options{Keyring: kr})

	// The keychain holding the key is unavailable (locked, no D-Bus session):
	// minting a file key would orphan every secret sealed so far.
	kr.set(func(k *fakeKeyring) { k.getErr = errNoKeychain })
	_, err := Open(context.Background(), dir, Options{Keyring: kr, Logger: quietLogger()})
	is.True(errors.Is(err, errNoKeychain))
	is.True(!exists(filepath.Join(dir, KeyFileName)))

	_, err = Open(context.Background(), dir, Options{Keyring: kr, Logger: quietLogger(), DisableKeyring: true})
	is.True(err != nil)
	is.True(!exists(filepath.Join(dir, KeyFileName)))

	// The entry was deleted from the keychain: same refusal.
	kr.set(func(k *fakeKeyring) { k.getErr = nil; clear(k.entries) })
	_, err = Open(context.Background(), dir, Options{Keyring: kr, Logger: quietLogger()})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "no such entry"))
	is.Equal(kr.sets, 1)
}

func TestDefaultKeyringIsGoKeyring(t *testing.T) {
	// go-keyring's mock is global state: this test restores TestMain's setup.
	t.Cleanup(func() { keyring.MockInitWithError(errors.New("tests never use the OS keychain")) })
	is := is.New(t)

	keyring.MockInit()
	dir := t.TempDir()
	b := openBox(t, dir, Options{})
	is.Equal(b.Source(), SourceKeychain)
	canon, err := filepath.EvalSymlinks(dir)
	is.NoErr(err)
	stored, err := keyring.Get(KeychainService, userFor(canon))
	is.NoErr(err)
	is.True(len(stored) > 0)

	keyring.MockInitWithError(errNoKeychain)
	fileDir := t.TempDir()
	b = openBox(t, fileDir, Options{})
	is.Equal(b.Source(), SourceFile)
	is.True(exists(filepath.Join(fileDir, KeyFileName)))
}

func TestKeyNeverLogged(t *testing.T) {
	is := is.New(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	kr := newFakeKeyring()
	kr.getErr = errNoKeychain

	dir := t.TempDir()
	openBox(t, dir, Options{Keyring: kr, Logger: logger}) // creates the file
	openBox(t, dir, Options{Keyring: kr, Logger: logger}) // reads it
	openBox(t, t.TempDir(), Options{Keyring: kr, Logger: logger, DisableKeyring: true})
	is.True(logs.Len() > 0) // something was logged, and it is checked below

	key := readStoredFileKey(t, dir)
	for _, form := range []string{
		string(key),
		base64.StdEncoding.EncodeToString(key),
		base64.RawStdEncoding.EncodeToString(key),
		base64.URLEncoding.EncodeToString(key),
		base64.RawURLEncoding.EncodeToString(key),
		hex.EncodeToString(key),
		base64.StdEncoding.EncodeToString(key)[:16], // any long fragment
	} {
		is.True(!strings.Contains(logs.String(), form))
	}
}

func TestStoredKeyNeverInErrors(t *testing.T) {
	is := is.New(t)
	const secret = "c2VjcmV0LXZhbHVlLXRoYXQtaXMtbm90LTMyLWJ5dGVz" // valid base64, wrong length
	dir := t.TempDir()
	kr := newFakeKeyring()
	canon, err := filepath.EvalSymlinks(dir)
	is.NoErr(err)
	kr.entries[KeychainService+"/"+userFor(canon)] = secret
	_, err = Open(context.Background(), dir, Options{Keyring: kr, Logger: quietLogger()})
	is.True(err != nil)
	is.True(!strings.Contains(err.Error(), secret))
	is.Equal(kr.sets, 0) // a corrupt entry is reported, never overwritten

	fileDir := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(fileDir, KeyFileName), []byte(secret+"\n"), 0o600))
	_, err = Open(context.Background(), fileDir, Options{Keyring: newFakeKeyring(), Logger: quietLogger()})
	is.True(err != nil)
	is.True(!strings.Contains(err.Error(), secret))
	data, err := os.ReadFile(filepath.Join(fileDir, KeyFileName))
	is.NoErr(err)
	is.Equal(string(data), secret+"\n") // not replaced
}

func TestKeychainCallHonoursContext(t *testing.T) {
	is := is.New(t)
	kr := newFakeKeyring()
	release := make(chan struct{})
	kr.block = release
	t.Cleanup(func() { close(release) })

	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Open(ctx, dir, Options{Keyring: kr, Logger: quietLogger()})
	is.True(errors.Is(err, context.DeadlineExceeded))
	is.True(time.Since(start) < 5*time.Second)
	is.True(!exists(filepath.Join(dir, KeyFileName))) // a slow keychain is not "no keychain"

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = Open(ctx, t.TempDir(), Options{Keyring: kr, Logger: quietLogger()})
	is.True(errors.Is(err, context.Canceled))
}

func TestInvalidDataDir(t *testing.T) {
	is := is.New(t)
	file := filepath.Join(t.TempDir(), "file")
	is.NoErr(os.WriteFile(file, nil, 0o600))
	for _, dir := range []string{"", filepath.Join(t.TempDir(), "missing"), file} {
		b, err := Open(context.Background(), dir, Options{Keyring: newFakeKeyring(), Logger: quietLogger()})
		is.True(err != nil)
		is.True(b == nil)
	}
}

func TestCorruptMarker(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(dir, MarkerFileName), []byte("garbage"), 0o600))
	kr := newFakeKeyring()
	_, err := Open(context.Background(), dir, Options{Keyring: kr, Logger: quietLogger()})
	is.True(err != nil)
	is.Equal(kr.sets, 0)
	is.True(!exists(filepath.Join(dir, KeyFileName)))
}
