package bridge

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/store"
)

// Idempotency is the Idempotency-Key of a change with the bytes of the
// body it came with; an empty Key asks for none.
type Idempotency struct {
	Key  string
	Body []byte
}

// idem is an idempotency key bound to the route it was sent to, with the
// hash of the validated request in canonical JSON: the body's whitespace
// and key order do not matter, as for workflow runs (docs/bridge-api.md).
type idem struct {
	scope string
	key   string
	body  [32]byte // hash of the canonical request, stored
	raw   [32]byte // hash of the bytes sent: what records made before canonical hashing hold
}

// newIdem hashes request, the validated request value, as canonical JSON
// (json.Marshal of a struct in field order, map keys sorted).
func newIdem(scope, key string, request any, raw []byte) (*idem, error) {
	if key == "" {
		return nil, nil
	}
	canonical, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("hash request: %w", err)
	}
	return &idem{scope: scope, key: key, body: sha256.Sum256(canonical), raw: sha256.Sum256(raw)}, nil
}

// replay returns the stored answer for a repeated key, or nil.
func (s *Service) replay(tx *sql.Tx, p Principal, k *idem) (*Replay, error) {
	if k == nil {
		return nil, nil
	}
	var hash, resp []byte
	var status int
	// A record older than bridge.idempotency-retention is expired even
	// before the prune deletes it (idempotency_retention.go).
	err := tx.QueryRow(`SELECT body_hash, status, response FROM bridge_idempotency WHERE client_id = ? AND scope = ? AND key = ? AND created_at >= ?`,
		p.Client, k.scope, k.key, store.Text(s.idemCutoff())).Scan(&hash, &status, &resp)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if string(hash) != string(k.body[:]) && string(hash) != string(k.raw[:]) {
		return nil, errf(CodeIdempotencyConflict, "Idempotency-Key was already used with a different body")
	}
	if resp, err = store.Unpack(resp); err != nil {
		return nil, err
	}
	return &Replay{status: status, body: resp}, nil
}

func (s *Service) remember(tx *sql.Tx, p Principal, k *idem, status int, v any) error {
	if k == nil {
		return nil
	}
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// The response is stored packed (store.Pack); ON CONFLICT replaces an
	// expired record under the same key.
	_, err = tx.Exec(`INSERT INTO bridge_idempotency(client_id, scope, key, body_hash, status, response, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (client_id, scope, key) DO UPDATE SET body_hash = excluded.body_hash, status = excluded.status,
			response = excluded.response, created_at = excluded.created_at`,
		p.Client, k.scope, k.key, k.body[:], status, store.Pack(body), store.Text(s.now()))
	return err
}

// Replay is the stored answer to a repeated Idempotency-Key: the status
// and JSON body the first request got.
type Replay struct {
	status int
	body   []byte
}

// deleteExpiredIdempotency deletes up to limit records created before
// cutoff in one transaction and reports how many went.
func (s *Service) deleteExpiredIdempotency(ctx context.Context, cutoff string, limit int) (int64, error) {
	var n int64
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM bridge_idempotency WHERE rowid IN
			(SELECT rowid FROM bridge_idempotency WHERE created_at < ? LIMIT ?)`, cutoff, limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
