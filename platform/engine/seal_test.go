package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/store/secretbox"
)

// testBox is a secret box whose key lives in a test directory's file.
func testBox(t *testing.T) *secretbox.Box {
	t.Helper()
	box, err := secretbox.Open(context.Background(), t.TempDir(), secretbox.Options{DisableKeyring: true})
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// A sealed column hides its value, opens only in its own row, and a
// column stored before sealing reads as stored.
func TestSealedRunValues(t *testing.T) {
	is := is.New(t)
	s := sealer{testBox(t)}
	plain := []byte(`{"input":{"key":"hunter2"}}`)
	stored, err := s.seal(plain, stateAD("r1"))
	is.NoErr(err)
	is.True(strings.HasPrefix(stored, sealedPrefix))
	is.True(!strings.Contains(stored, "hunter2"))
	got, err := s.open(stored, stateAD("r1"))
	is.NoErr(err)
	is.Equal(string(got), string(plain))

	_, err = s.open(stored, stateAD("r2")) // moved to another run
	is.True(errors.Is(err, errSealed))
	_, err = s.open(stored, eventAD("r1", 1)) // moved to another column
	is.True(errors.Is(err, errSealed))
	_, err = s.open(sealedPrefix+"!!", stateAD("r1"))
	is.True(errors.Is(err, errSealed))

	got, err = s.open(string(plain), stateAD("r1")) // written before sealing
	is.NoErr(err)
	is.Equal(string(got), string(plain))
	kept, err := s.maybe(false, plain, stateAD("r1"))
	is.NoErr(err)
	is.Equal(kept, string(plain))
}
