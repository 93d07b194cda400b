package secretbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/zalando/go-keyring"
)

const (
	// KeychainService is the keychain service name of every data directory's key.
	KeychainService = "agent-bridge"
	// KeyFileName is the key file in the data directory (keychain fallback).
	KeyFileName = "secret.key"
	// MarkerFileName records, in the data directory, that the key is in the
	// keychain and under which user. It holds no secret.
	MarkerFileName = "secret.keychain"

	userPrefix = "data-dir-"
	// maxKeyFileSize bounds what is read from secret.key: a valid one is 45 bytes.
	maxKeyFileSize = 1 << 10
)

// Keyring is the part of go-keyring's API that secretbox uses. Get must return
// an error matching keyring.ErrNotFound (errors.Is) when there is no entry;
// any other error means the keychain is unavailable.
type Keyring interface {
	Get(service, user string) (string, error)
	Set(service, user, password string) error
}

// systemKeyring is the OS keychain (macOS Keychain, Windows Credential
// Manager, Secret Service on Linux) through go-keyring.
type systemKeyring struct{}

func (systemKeyring) Get(service, user string) (string, error) { return keyring.Get(service, user) }
func (systemKeyring) Set(service, user, password string) error {
	return keyring.Set(service, user, password)
}

// loadKey finds or creates the data directory's key; see Open for the rules.
func loadKey(ctx context.Context, dataDir string, opts Options) ([]byte, string, error) {
	dir, err := canonicalDir(dataDir)
	if err != nil {
		return nil, "", err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	keyPath := filepath.Join(dir, KeyFileName)

	key, err := readKeyFile(keyPath)
	if err == nil {
		logger.Warn("secretbox: the secrets key is kept in a file, not the OS keychain", "path", keyPath)
		return key, SourceFile, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}

	markerPath := filepath.Join(dir, MarkerFileName)
	user, marked, err := readMarker(markerPath)
	if err != nil {
		return nil, "", err
	}
	if !marked {
		user = userFor(dir)
	}
	if opts.DisableKeyring {
		if marked {
			return nil, "", fmt.Errorf("secretbox: the key of %s is in the OS keychain (per %s) but the keychain is disabled", dir, markerPath)
		}
		return fileFallback(keyPath, logger, "keychain disabled by configuration")
	}

	kr := opts.Keyring
	if kr == nil {
		kr = systemKeyring{}
	}
	secret, err := withContext(ctx, func() (string, error) { return kr.Get(KeychainService, user) })
	switch {
	case err == nil:
		key, err := decodeKey(secret)
		if err != nil {
			return nil, "", fmt.Errorf("secretbox: keychain entry %s/%s: %w", KeychainService, user, err)
		}
		if !marked {
			// Found but unrecorded (the marker write failed last time):
			// record it so a later keychain outage does not mint a file key.
			if err := writeMarker(dir, markerPath, user); err != nil {
				return nil, "", err
			}
		}
		return key, SourceKeychain, nil
	case ctx.Err() != nil:
		return nil, "", fmt.Errorf("secretbox: reading the OS keychain: %w", ctx.Err())
	case errors.Is(err, keyring.ErrNotFound):
		if marked {
			return nil, "", fmt.Errorf("secretbox: %s says the key of %s is in the OS keychain as %s/%s, but the keychain has no such entry; "+
				"refusing to create a new key that could not open the secrets already sealed", markerPath, dir, KeychainService, user)
		}
		key, err := newKey()
		if err != nil {
			return nil, "", err
		}
		_, setErr := withContext(ctx, func() (struct{}, error) {
			return struct{}{}, kr.Set(KeychainService, user, base64.StdEncoding.EncodeToString(key))
		})
		if setErr == nil {
			if err := writeMarker(dir, markerPath, user); err != nil {
				return nil, "", err
			}
			return key, SourceKeychain, nil
		}
		if ctx.Err() != nil {
			// The Set may still complete; the next Open finds that key.
			return nil, "", fmt.Errorf("secretbox: writing the OS keychain: %w", ctx.Err())
		}
		// Readable but not writable (e.g. locked): same as unavailable.
		return fileFallback(keyPath, logger, "storing in the OS keychain failed: "+setErr.Error())
	default:
		if marked {
			return nil, "", fmt.Errorf("secretbox: the key of %s is in the OS keychain (per %s) but the keychain is unavailable: %w", dir, markerPath, err)
		}
		return fileFallback(keyPath, logger, "OS keychain unavailable: "+err.Error())
	}
}

func fileFallback(keyPath string, logger *slog.Logger, reason string) ([]byte, string, error) {
	key, err := createKeyFile(keyPath)
	if err != nil {
		return nil, "", err
	}
	logger.Warn("secretbox: keeping the secrets key in a file instead of the OS keychain", "path", keyPath, "reason", reason)
	return key, SourceFile, nil
}

// canonicalDir resolves dataDir to an absolute path without symlinks, so the
// same directory always derives the same keychain user (macOS's /tmp is
// /private/tmp, for one).
func canonicalDir(dataDir string) (string, error) {
	if dataDir == "" {
		return "", errors.New("secretbox: empty data directory")
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Errorf("secretbox: data directory: %w", err)
	}
	dir, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("secretbox: data directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("secretbox: data directory: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("secretbox: data directory %s is not a directory", dir)
	}
	return dir, nil
}

// userFor derives the keychain user of a data directory from its path.
func userFor(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return userPrefix + hex.EncodeToString(sum[:16])
}

func newKey() ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("secretbox: generating key: %w", err)
	}
	return key, nil
}

// decodeKey parses the stored form (standard base64). Errors never include
// the input: it may be a key.
func decodeKey(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(key) != KeySize {
		return nil, errors.New("stored key is not a base64-encoded 32-byte key")
	}
	return key, nil
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err // the caller's "no file yet" case, unwrapped on purpose
		}
		return nil, fmt.Errorf("secretbox: key file: %w", err)
	}
	defer f.Close()
	// Check the file we opened, not the path, so a swap in between is moot.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secretbox: key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("secretbox: key file %s is not a regular file", path)
	}
	if err := checkKeyFileMode(path, fi.Mode()); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize))
	if err != nil {
		return nil, fmt.Errorf("secretbox: key file %s: %w", path, err)
	}
	key, err := decodeKey(string(data))
	clear(data)
	if err != nil {
		return nil, fmt.Errorf("secretbox: key file %s: %w", path, err)
	}
	return key, nil
}

// createKeyFile creates secret.key exclusively with mode 0600. If another
// process won the race, its key is used.
func createKeyFile(path string) ([]byte, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		key, err := readKeyFile(path)
		if errors.Is(err, fs.ErrNotExist) { // e.g. a dangling symlink
			return nil, fmt.Errorf("secretbox: key file %s exists but cannot be opened: %w", path, err)
		}
		return key, err
	}
	if err != nil {
		return nil, fmt.Errorf("secretbox: creating key file: %w", err)
	}
	encoded := []byte(base64.StdEncoding.EncodeToString(key) + "\n")
	_, err = f.Write(encoded)
	clear(encoded)
	if err == nil {
		err = f.Sync() // losing this key loses every secret: make it durable
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(path) // a truncated key file would be worse than none
		return nil, fmt.Errorf("secretbox: writing key file %s: %w", path, err)
	}
	return key, nil
}

// readMarker returns the keychain user recorded in the marker, and whether
// there is a marker.
func readMarker(path string) (string, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("secretbox: keychain marker: %w", err)
	}
	user := string(bytes.TrimSpace(data))
	if !validUser(user) {
		return "", false, fmt.Errorf("secretbox: keychain marker %s is corrupt", path)
	}
	return user, true, nil
}

func writeMarker(dir, path, user string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // a concurrent Open recorded it
	}
	if err != nil {
		return fmt.Errorf("secretbox: writing keychain marker: %w", err)
	}
	_, err = io.WriteString(f, user+"\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("secretbox: writing keychain marker %s: %w", path, err)
	}
	return nil
}

func validUser(u string) bool {
	if !strings.HasPrefix(u, userPrefix) || len(u) != len(userPrefix)+32 {
		return false
	}
	_, err := hex.DecodeString(u[len(userPrefix):])
	return err == nil
}

// withContext runs a keychain call so that ctx can cut the wait short: a
// keychain may block on an unlock prompt. The call itself cannot be
// cancelled; it finishes in the background.
func withContext[T any](ctx context.Context, call func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := call()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}
