package bridge

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
)

// The SQL of the bridge's own settings (table bridge_settings).

// setting returns a persistent random value, creating it on first use.
func (s *Service) setting(ctx context.Context, name string, size int) ([]byte, error) {
	var v []byte
	err := s.db.Reader().QueryRowContext(ctx, `SELECT value FROM bridge_settings WHERE name = ?`, name).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("bridge: read setting %s: %w", name, err)
	}
	v = make([]byte, size)
	if _, err := rand.Read(v); err != nil {
		return nil, err
	}
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO bridge_settings(name, value) VALUES (?, ?) ON CONFLICT(name) DO NOTHING`, name, v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bridge: store setting %s: %w", name, err)
	}
	// Another writer may have won the race; read back what is stored.
	if err := s.db.Reader().QueryRowContext(ctx, `SELECT value FROM bridge_settings WHERE name = ?`, name).Scan(&v); err != nil {
		return nil, fmt.Errorf("bridge: read setting %s: %w", name, err)
	}
	return v, nil
}
