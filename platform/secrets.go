package platform

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/secretbox"
)

// Names of the platform's sealed secrets (table platform_secrets).
const (
	secretIdPKey     = "idp-signing-key"
	secretCursorKey  = "cursor-key"
	secretAssociated = "platform/secret/"
)

// secret returns the sealed secret name, creating it with gen on first
// use. The associated data binds each ciphertext to its name.
func secret(ctx context.Context, db *store.DB, box *secretbox.Box, name string, gen func() ([]byte, error)) ([]byte, error) {
	ad := []byte(secretAssociated + name)
	var sealed []byte
	err := db.Reader().QueryRowContext(ctx, `SELECT sealed FROM platform_secrets WHERE name = ?`, name).Scan(&sealed)
	if err == nil {
		plain, err := box.Open(sealed, ad)
		if err != nil {
			return nil, fmt.Errorf("platform: open secret %s (was the data directory's key replaced?): %w", name, err)
		}
		return plain, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("platform: read secret %s: %w", name, err)
	}
	plain, err := gen()
	if err != nil {
		return nil, err
	}
	if sealed, err = box.Seal(plain, ad); err != nil {
		return nil, fmt.Errorf("platform: seal secret %s: %w", name, err)
	}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO platform_secrets(name, sealed, created_at) VALUES (?, ?, ?)`, name, sealed, store.Millis(time.Now()))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("platform: store secret %s: %w", name, err)
	}
	return plain, nil
}

// signingKey loads the built-in provider's RS256 key, generating (or
// taking preset, for tests) and sealing it on first start.
func signingKey(ctx context.Context, db *store.DB, box *secretbox.Box, preset *rsa.PrivateKey) (*rsa.PrivateKey, error) {
	pem, err := secret(ctx, db, box, secretIdPKey, func() ([]byte, error) {
		k := preset
		if k == nil {
			var err error
			if k, err = auth.GenerateKey(); err != nil {
				return nil, err
			}
		}
		return auth.MarshalPrivateKeyPEM(k)
	})
	if err != nil {
		return nil, err
	}
	return auth.ParsePrivateKeyPEM(pem)
}

// cursorKey loads the page cursor HMAC key (stable across restarts, so
// cursors survive them).
func cursorKey(ctx context.Context, db *store.DB, box *secretbox.Box) ([]byte, error) {
	return secret(ctx, db, box, secretCursorKey, func() ([]byte, error) {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("platform: cursor key: %w", err)
		}
		return k, nil
	})
}
