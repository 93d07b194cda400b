package daemon

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// TokenPrefix starts every bridge token, owner and client alike, so secret
// scanners can recognise a leaked one.
const TokenPrefix = "brg_"

// NewToken returns TokenPrefix followed by 256 random bits in base64url.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// TokenHash is the SHA-256 of a token: the only form in which tokens are stored.
func TokenHash(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// WellFormedToken reports whether s has the shape of a bridge token.
func WellFormedToken(s string) bool {
	rest, ok := strings.CutPrefix(s, TokenPrefix)
	if !ok || len(rest) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil
}

// HashEqual compares two token hashes in constant time.
func HashEqual(a, b [32]byte) bool { return subtle.ConstantTimeCompare(a[:], b[:]) == 1 }

// ensureOwnerToken reads owner.token, creating it (0600, exclusively) when absent.
// It never overwrites an existing file.
func ensureOwnerToken(path string) (hash [32]byte, created bool, err error) {
	data, err := os.ReadFile(path)
	if err == nil {
		tok := strings.TrimSpace(string(data))
		if !WellFormedToken(tok) {
			return hash, false, fmt.Errorf("%s does not hold a valid owner token; remove it to have a new one created", path)
		}
		return TokenHash(tok), false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return hash, false, fmt.Errorf("read owner token: %w", err)
	}
	tok, err := NewToken()
	if err != nil {
		return hash, false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return hash, false, fmt.Errorf("create owner token: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return hash, false, fmt.Errorf("write owner token: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return hash, false, fmt.Errorf("write owner token: %w", err)
	}
	if err := f.Close(); err != nil {
		return hash, false, fmt.Errorf("write owner token: %w", err)
	}
	return TokenHash(tok), true, nil
}

// ReadOwnerToken returns the owner token of a data directory (for the CLI).
func ReadOwnerToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read owner token: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	if !WellFormedToken(tok) {
		return "", fmt.Errorf("%s does not hold a valid owner token", path)
	}
	return tok, nil
}
