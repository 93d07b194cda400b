// Package secretbox encrypts the daemon's secrets at rest with AES-256-GCM.
//
// The 256-bit key is kept in the OS keychain (service "agent-bridge") or, where
// no keychain is available (CI, headless Linux), in the 0600 file secret.key
// in the data directory. See Open for how the place is chosen and kept.
//
// Sealed format (version 1):
//
//	0x01 | 12-byte random nonce | AES-256-GCM ciphertext and 16-byte tag
//
// The version byte is authenticated together with the caller's associated
// data, so it cannot be swapped without detection. A random 96-bit nonce
// limits one key to about 2^32 messages, far beyond a local daemon's secrets.
package secretbox

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
)

const (
	// KeySize is the key length in bytes (AES-256).
	KeySize = 32

	version1 byte = 1
	// overhead of version 1: version byte + nonce + tag.
	overhead = 1 + 12 + 16
)

// Where the key is kept, as reported by Box.Source.
const (
	SourceKeychain = "keychain"
	SourceFile     = "file"
)

var (
	// ErrDecrypt reports a ciphertext that is not authentic: tampered,
	// truncated, sealed under another key, or with other associated data.
	ErrDecrypt = errors.New("secretbox: message authentication failed")
	// ErrUnsupportedVersion reports a ciphertext whose format version this
	// build does not know (e.g. written by a newer bridge).
	ErrUnsupportedVersion = errors.New("secretbox: unsupported ciphertext version")
)

// Box seals and opens secrets with the data directory's key. It is safe for
// concurrent use.
type Box struct {
	aead   cipher.AEAD
	source string
}

// Options configures Open. The zero value uses the OS keychain and slog.Default().
type Options struct {
	// Keyring stores the key; nil means the OS keychain via go-keyring.
	Keyring Keyring
	// Logger receives the warning when the key lives in a file; nil means
	// slog.Default(). The key itself is never logged.
	Logger *slog.Logger
	// DisableKeyring skips the keychain and keeps the key in the file.
	DisableKeyring bool
}

// Open returns the Box for dataDir, which must exist, creating the key on
// first use. The key's place, once chosen, is kept:
//
//  1. If dataDir/secret.key exists, it is the key (a directory whose key went
//     to a file never silently switches to a fresh keychain key). On unix the
//     file must not be accessible to group or others.
//  2. Otherwise the keychain is asked (unless DisableKeyring). A key found
//     there is used. If there is none, a new key is stored there, and a marker
//     file dataDir/secret.keychain (not secret: it names the keychain entry)
//     records that this directory's key lives in the keychain.
//  3. If the keychain is unavailable (any error but "not found"), a new key is
//     written to secret.key with mode 0600, and a warning is logged, unless
//     the marker says the key is in the keychain: then Open fails rather than
//     mint a new key that could not open the secrets already sealed.
//
// The keychain entry's user is derived from dataDir's absolute, symlink-free
// path when the key is created and then read from the marker, so two data
// directories never share a key and a moved directory keeps finding its own.
// Keychain calls honour ctx (a keychain can block on a user prompt).
func Open(ctx context.Context, dataDir string, opts Options) (*Box, error) {
	key, source, err := loadKey(ctx, dataDir, opts)
	if err != nil {
		return nil, err
	}
	b, err := newBox(key, source)
	clear(key)
	return b, err
}

func newBox(key []byte, source string) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secretbox: key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	return &Box{aead: aead, source: source}, nil
}

// Source reports where the key is kept: SourceKeychain or SourceFile.
func (b *Box) Source() string { return b.source }

// Seal encrypts and authenticates plaintext, binding it to associatedData
// (e.g. the row and column a secret belongs to, so it cannot be moved to
// another; nil and empty are the same). The result is len(plaintext)+29 bytes.
func (b *Box) Seal(plaintext, associatedData []byte) ([]byte, error) {
	if int64(len(plaintext)) > maxPlaintext {
		return nil, fmt.Errorf("secretbox: seal: plaintext of %d bytes is too large", len(plaintext))
	}
	out := make([]byte, 1, overhead+len(plaintext))
	out[0] = version1
	// The AEAD draws a random nonce and prepends it to its output.
	return b.aead.Seal(out, nil, plaintext, withVersion(version1, associatedData)), nil
}

// Open authenticates and decrypts a ciphertext from Seal with the same
// associated data. Any alteration yields ErrDecrypt.
func (b *Box) Open(ciphertext, associatedData []byte) ([]byte, error) {
	if len(ciphertext) == 0 {
		return nil, fmt.Errorf("secretbox: open: empty ciphertext: %w", ErrDecrypt)
	}
	if v := ciphertext[0]; v != version1 {
		return nil, fmt.Errorf("secretbox: open: version %d: %w", v, ErrUnsupportedVersion)
	}
	if len(ciphertext) < overhead {
		return nil, fmt.Errorf("secretbox: open: ciphertext of %d bytes is truncated: %w", len(ciphertext), ErrDecrypt)
	}
	plain, err := b.aead.Open(nil, nil, ciphertext[1:], withVersion(version1, associatedData))
	if err != nil {
		return nil, ErrDecrypt
	}
	return plain, nil
}

// SealString seals a string and returns it as unpadded URL-safe base64, for
// text columns and config files.
func (b *Box) SealString(plaintext, associatedData string) (string, error) {
	sealed, err := b.Seal([]byte(plaintext), []byte(associatedData))
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sealed), nil
}

// OpenString reverses SealString.
func (b *Box) OpenString(ciphertext, associatedData string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(ciphertext)
	if err != nil {
		return "", fmt.Errorf("secretbox: open: ciphertext is not base64: %w", ErrDecrypt)
	}
	plain, err := b.Open(raw, []byte(associatedData))
	if err != nil {
		return "", err
	}
	return string(plain), nil
}

// maxPlaintext keeps len+overhead from overflowing and stays far below
// GCM's per-message limit of about 64 GiB.
const maxPlaintext = 1 << 32

// withVersion returns version || ad: the version byte is authenticated, so a
// future format cannot be confused with this one by flipping it.
func withVersion(v byte, ad []byte) []byte {
	out := make([]byte, 1+len(ad))
	out[0] = v
	copy(out[1:], ad)
	return out
}
