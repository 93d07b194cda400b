package bridge

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
)

// Idempotency-Key records of jobs and messages live in bridge_idempotency
// and are kept by the toolkit's one idempotency store (httpx.Idempotency),
// which the platform's records use too. The table is unchanged since
// migration 0104: created_at holds store.Text's form, which sorts in time
// order, so existing data directories keep their records.
var idemTable = httpx.IdempotencyTable{
	Name: "bridge_idempotency", Owner: "client_id", Scope: "scope", Key: "key",
	Hash: "body_hash", Status: "status", Body: "response", Created: "created_at",
	Time: func(t time.Time) any { return store.Text(t) },
}

// newIdemStore is the store of s's records: retention
// bridge.idempotency-retention, s's clock.
func (s *Service) newIdemStore() *httpx.Idempotency {
	return httpx.NewIdempotency(idemTable, func() time.Duration { return s.cfg.IdempotencyRetention.D() }, func() time.Time { return s.now() })
}

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

// Replay is the stored answer to a repeated Idempotency-Key: the status
// and JSON body the first request got.
type Replay struct {
	status int
	body   []byte
}

// replay returns the stored answer for a repeated key, or nil. A record
// older than bridge.idempotency-retention is expired even before the prune
// deletes it (idempotency_retention.go).
func (s *Service) replay(ctx context.Context, tx *sql.Tx, p Principal, k *idem) (*Replay, error) {
	if k == nil {
		return nil, nil
	}
	rec, err := s.idem.Lookup(ctx, tx, p.Client, k.scope, k.key)
	if err != nil || rec == nil {
		return nil, err
	}
	if !rec.Matches(k.body[:], k.raw[:]) {
		return nil, errf(CodeIdempotencyConflict, "Idempotency-Key was already used with a different body")
	}
	return &Replay{status: rec.Status, body: rec.Body}, nil
}

// remember stores the answer v of a change under its key, in the change's
// transaction: it is replayed exactly when the change committed.
func (s *Service) remember(ctx context.Context, tx *sql.Tx, p Principal, k *idem, status int, v any) error {
	if k == nil {
		return nil
	}
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.idem.Save(ctx, tx, p.Client, k.scope, k.key, httpx.IdemRecord{Hash: k.body[:], Status: status, Body: body})
}
