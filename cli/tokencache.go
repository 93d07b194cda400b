package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/agentbridge/bridge/daemon"
)

// Token cache: platform access tokens obtained by `bridge platform login`
// and `bridge login` are kept in the OS keychain (service
// keychainTokenService, one entry per data directory and provider), or,
// where there is no keychain or BRIDGE_DISABLE_KEYRING=1, in the 0600 file
// tokenCacheFile of the data directory.
const (
	keychainTokenService = "agent-bridge-platform"
	tokenCacheFile       = "platform-tokens.json"
)

// cachedToken is one provider's sign-in.
type cachedToken struct {
	Provider      string    `json:"provider"`
	Issuer        string    `json:"issuer"`
	ClientID      string    `json:"client_id"`
	AccessToken   string    `json:"access_token"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	TokenEndpoint string    `json:"token_endpoint,omitempty"`
	ExpiresAt     time.Time `json:"expires_at"`
}

// usable reports whether the access token is valid for a while longer.
func (t *cachedToken) usable(now time.Time) bool {
	return t != nil && t.AccessToken != "" && (t.ExpiresAt.IsZero() || now.Add(30*time.Second).Before(t.ExpiresAt))
}

type tokenCache struct {
	dir     string
	keyring bool
}

func newTokenCache(dir string) *tokenCache {
	return &tokenCache{dir: dir, keyring: os.Getenv("BRIDGE_DISABLE_KEYRING") != "1"}
}

// user names the keychain entry of provider for this data directory.
func (c *tokenCache) user(provider string) string {
	abs, err := filepath.Abs(c.dir)
	if err != nil {
		abs = c.dir
	}
	sum := sha256.Sum256([]byte(abs))
	return "data-dir-" + hex.EncodeToString(sum[:8]) + ":" + provider
}

func (c *tokenCache) path() string { return filepath.Join(c.dir, tokenCacheFile) }

func (c *tokenCache) readFile() (map[string]*cachedToken, error) {
	data, err := os.ReadFile(c.path())
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*cachedToken{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("token cache: %w", err)
	}
	m := map[string]*cachedToken{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("token cache %s is corrupt; remove it and sign in again", c.path())
	}
	return m, nil
}

func (c *tokenCache) writeFile(m map[string]*cachedToken) error {
	if len(m) == 0 {
		if err := os.Remove(c.path()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("token cache: %w", err)
		}
		return nil
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := daemon.WriteFileAtomic(c.path(), data, 0o600); err != nil {
		return fmt.Errorf("token cache: %w", err)
	}
	return nil
}

// Get returns the cached sign-in of provider, or nil.
func (c *tokenCache) Get(provider string) (*cachedToken, error) {
	if c.keyring {
		raw, err := keyring.Get(keychainTokenService, c.user(provider))
		if err == nil {
			var t cachedToken
			if json.Unmarshal([]byte(raw), &t) == nil {
				return &t, nil
			}
		}
	}
	m, err := c.readFile()
	if err != nil {
		return nil, err
	}
	return m[provider], nil
}

// Put stores t: in the keychain when it can, else in the file.
func (c *tokenCache) Put(t *cachedToken) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	m, err := c.readFile()
	if err != nil {
		return err
	}
	if c.keyring && keyring.Set(keychainTokenService, c.user(t.Provider), string(data)) == nil {
		if _, stale := m[t.Provider]; stale {
			delete(m, t.Provider)
			return c.writeFile(m)
		}
		return nil
	}
	m[t.Provider] = t
	return c.writeFile(m)
}

// Delete forgets provider's sign-in; it reports whether there was one.
func (c *tokenCache) Delete(provider string) (bool, error) {
	found := false
	if c.keyring {
		if err := keyring.Delete(keychainTokenService, c.user(provider)); err == nil {
			found = true
		}
	}
	m, err := c.readFile()
	if err != nil {
		return found, err
	}
	if _, ok := m[provider]; ok {
		delete(m, provider)
		found = true
		return found, c.writeFile(m)
	}
	return found, nil
}
