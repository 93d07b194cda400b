package bridge

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// The SQL of client tokens (tables bridge_clients, bridge_tokens). Tokens
// are stored as hashes only.

// insertToken stores a token's hash for client, creating the client.
func insertToken(ctx context.Context, db *store.DB, hash [32]byte, client string, scopes, profiles []string, now time.Time) error {
	sj, _ := json.Marshal(scopes)
	pj, _ := json.Marshal(profiles)
	ts := store.Text(now)
	return db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO bridge_clients(id, created_at) VALUES (?, ?) ON CONFLICT(id) DO NOTHING`, client, ts); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO bridge_tokens(hash, client_id, scopes, profiles, created_at) VALUES (?, ?, ?, ?, ?)`,
			hash[:], client, string(sj), string(pj), ts)
		return err
	})
}

// revokeTokens revokes the active tokens of client and counts them; an
// unknown client is not_found.
func revokeTokens(ctx context.Context, db *store.DB, client string, now time.Time) (int, error) {
	var n int64
	err := db.Write(ctx, func(tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRow(`SELECT count(*) FROM bridge_clients WHERE id = ?`, client).Scan(&exists); err != nil {
			return err
		}
		if exists == 0 {
			return errf(CodeNotFound, "no client named %q", client)
		}
		res, err := tx.Exec(`UPDATE bridge_tokens SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL`, store.Text(now), client)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// listTokens lists every token ever issued, newest first.
func listTokens(ctx context.Context, db *sql.DB) ([]TokenInfo, error) {
	rows, err := db.QueryContext(ctx, `SELECT hash, client_id, scopes, profiles, created_at, revoked_at FROM bridge_tokens ORDER BY created_at DESC, client_id`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	out := []TokenInfo{}
	for rows.Next() {
		var hash []byte
		var sj, pj, created string
		var revoked sql.NullString
		var ti TokenInfo
		if err := rows.Scan(&hash, &ti.Client, &sj, &pj, &created, &revoked); err != nil {
			return nil, err
		}
		var h [32]byte
		copy(h[:], hash)
		ti.TokenID = tokenID(h)
		_ = json.Unmarshal([]byte(sj), &ti.Scopes)
		_ = json.Unmarshal([]byte(pj), &ti.Profiles)
		ti.CreatedAt = store.FromText(created)
		if revoked.Valid {
			ti.RevokedAt = ptrTime(store.FromText(revoked.String))
		}
		out = append(out, ti)
	}
	return out, rows.Err()
}

func (s *Service) lookupToken(ctx context.Context, hash [32]byte) (Principal, error) {
	var stored []byte
	var p Principal
	var sj, pj string
	err := s.db.Reader().QueryRowContext(ctx,
		`SELECT hash, client_id, scopes, profiles FROM bridge_tokens WHERE hash = ? AND revoked_at IS NULL`, hash[:]).
		Scan(&stored, &p.Client, &sj, &pj)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && subtle.ConstantTimeCompare(stored, hash[:]) != 1) {
		return Principal{}, errf(CodeUnauthorized, "a valid bearer token is required")
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up token: %w", err)
	}
	_ = json.Unmarshal([]byte(sj), &p.Scopes)
	_ = json.Unmarshal([]byte(pj), &p.Profiles)
	p.hash = hash
	return p, nil
}

// revokedCount counts revoked tokens, or -1 when the database cannot say.
func (s *Service) revokedCount(ctx context.Context) int64 {
	var n int64
	if err := s.db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM bridge_tokens WHERE revoked_at IS NOT NULL`).Scan(&n); err != nil {
		return -1
	}
	return n
}
