package secretbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/matryer/is"
	"github.com/zalando/go-keyring"
)

// TestMain points go-keyring at its mock, so no test can reach the real OS
// keychain even if it forgets to pass a fake (go test needs no keychain).
func TestMain(m *testing.M) {
	keyring.MockInitWithError(errors.New("tests never use the OS keychain"))
	os.Exit(m.Run())
}

// fakeKeyring is an in-memory keychain that can fail or block on demand.
type fakeKeyring struct {
	mu      sync.Mutex
	entries map[string]string
	getErr  error
	setErr  error
	block   chan struct{} // when set, Get waits for it to close
	gets    int
	sets    int
}

func newFakeKeyring() *fakeKeyring { return &fakeKeyring{entries: map[string]string{}} }

func (k *fakeKeyring) Get(service, user string) (string, error) {
	k.mu.Lock()
	block := k.block
	k.mu.Unlock()
	if block != nil {
		<-block
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gets++
	if k.getErr != nil {
		return "", k.getErr
	}
	v, ok := k.entries[service+"/"+user]
	if !ok {
		return "", keyring.ErrNotFound
	}
	return v, nil
}

func (k *fakeKeyring) Set(service, user, password string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sets++
	if k.setErr != nil {
		return k.setErr
	}
	k.entries[service+"/"+user] = password
	return nil
}

func (k *fakeKeyring) set(f func(k *fakeKeyring)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f(k)
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func openBox(t *testing.T, dir string, opts Options) *Box {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	b, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return b
}

// sameKey reports whether two boxes hold the same key.
func sameKey(t *testing.T, a, b *Box) bool {
	t.Helper()
	sealed, err := a.Seal([]byte("probe"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Open(sealed, nil)
	return err == nil
}

func TestSealOpenRoundTrip(t *testing.T) {
	is := is.New(t)
	b := openBox(t, t.TempDir(), Options{Keyring: newFakeKeyring()})
	is.Equal(b.Source(), SourceKeychain)
	for _, c := range []struct {
		name      string
		plaintext []byte
		ad        []byte
	}{
		{"empty", nil, nil},
		{"short", []byte("sk-live-123"), []byte("providers/openai/api_key")},
		{"binary", []byte{0, 1, 2, 255}, nil},
		{"large", bytes.Repeat([]byte("x"), 1<<20), []byte("blob")},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			sealed, err := b.Seal(c.plaintext, c.ad)
			is.NoErr(err)
			is.Equal(len(sealed), len(c.plaintext)+overhead)
			is.Equal(sealed[0], version1)
			if len(c.plaintext) >= 4 {
				is.True(!bytes.Contains(sealed, c.plaintext[:4])) // not stored in the clear
			}
			again, err := b.Seal(c.plaintext, c.ad)
			is.NoErr(err)
			is.True(!bytes.Equal(sealed, again)) // random nonce
			plain, err := b.Open(sealed, c.ad)
			is.NoErr(err)
			is.Equal(len(plain), len(c.plaintext))
			is.True(bytes.Equal(plain, c.plaintext))
		})
	}
}

func TestTamperedCiphertextFails(t *testing.T) {
	is := is.New(t)
	b := openBox(t, t.TempDir(), Options{Keyring: newFakeKeyring()})
	sealed, err := b.Seal([]byte("secret value"), []byte("ad"))
	is.NoErr(err)

	for i := range sealed {
		for _, bit := range []byte{0x01, 0x80} {
			tampered := bytes.Clone(sealed)
			tampered[i] ^= bit
			_, err := b.Open(tampered, []byte("ad"))
			if i == 0 {
				is.True(errors.Is(err, ErrUnsupportedVersion))
			} else if !errors.Is(err, ErrDecrypt) {
				t.Fatalf("flipping bit %#x of byte %d: err = %v, want ErrDecrypt", bit, i, err)
			}
		}
	}
	for n := range len(sealed) {
		_, err := b.Open(sealed[:n], []byte("ad"))
		is.True(err != nil) // every truncation
	}
	_, err = b.Open(append(bytes.Clone(sealed), 0), []byte("ad"))
	is.True(errors.Is(err, ErrDecrypt)) // extension

	future := bytes.Clone(sealed)
	future[0] = 2
	_, err = b.Open(future, []byte("ad"))
	is.True(errors.Is(err, ErrUnsupportedVersion))
}

func TestWrongAssociatedDataFails(t *testing.T) {
	is := is.New(t)
	b := openBox(t, t.TempDir(), Options{Keyring: newFakeKeyring()})
	sealed, err := b.Seal([]byte("token"), []byte("clients/1"))
	is.NoErr(err)
	for _, ad := range [][]byte{[]byte("clients/2"), nil, []byte("clients/1 "), []byte("\x01clients/1")} {
		_, err := b.Open(sealed, ad)
		is.True(errors.Is(err, ErrDecrypt))
	}
	plain, err := b.Open(sealed, []byte("clients/1"))
	is.NoErr(err)
	is.Equal(string(plain), "token")
}

func TestStringHelpers(t *testing.T) {
	is := is.New(t)
	b := openBox(t, t.TempDir(), Options{Keyring: newFakeKeyring()})
	s, err := b.SealString("hunter2", "users/42/password")
	is.NoErr(err)
	is.True(!bytes.ContainsAny([]byte(s), "+/=\n")) // safe in URLs, env vars and YAML
	plain, err := b.OpenString(s, "users/42/password")
	is.NoErr(err)
	is.Equal(plain, "hunter2")

	_, err = b.OpenString(s, "users/43/password")
	is.True(errors.Is(err, ErrDecrypt))
	_, err = b.OpenString("not base64!", "users/42/password")
	is.True(errors.Is(err, ErrDecrypt))
	_, err = b.OpenString("", "")
	is.True(errors.Is(err, ErrDecrypt))
	tampered := []byte(s)
	tampered[len(tampered)/2] ^= 1 // still base64, altered bits
	if tampered[len(tampered)/2] == '-' || tampered[len(tampered)/2] == '_' {
		tampered[len(tampered)/2] = 'A'
	}
	_, err = b.OpenString(string(tampered), "users/42/password")
	is.True(err != nil)
}

func TestConcurrentUse(t *testing.T) {
	b := openBox(t, t.TempDir(), Options{Keyring: newFakeKeyring()})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				msg := fmt.Sprintf("%d-%d", g, i)
				sealed, err := b.Seal([]byte(msg), nil)
				if err != nil {
					t.Error(err)
					return
				}
				plain, err := b.Open(sealed, nil)
				if err != nil || string(plain) != msg {
					t.Errorf("round trip of %q: %q, %v", msg, plain, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzOpen: no input makes Open panic, and nothing but the genuine ciphertext
// opens (with 2^-128 forgery odds, any other success is a bug).
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	b, err := Open(context.Background(), dir, Options{Keyring: newFakeKeyring(), Logger: quietLogger()})
	if err != nil {
		f.Fatal(err)
	}
	genuine, err := b.Seal([]byte("payload"), []byte("ad"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(genuine, []byte("ad"))
	f.Add([]byte{}, []byte(nil))
	f.Add([]byte{1}, []byte("ad"))
	f.Add(bytes.Repeat([]byte{1}, overhead), []byte("ad"))
	f.Fuzz(func(t *testing.T, ciphertext, ad []byte) {
		plain, err := b.Open(ciphertext, ad)
		if err == nil && (!bytes.Equal(ciphertext, genuine) || string(ad) != "ad" || string(plain) != "payload") {
			t.Fatalf("forged ciphertext %x opened to %q", ciphertext, plain)
		}
		if err != nil && plain != nil {
			t.Fatal("plaintext returned with an error")
		}
	})
}
