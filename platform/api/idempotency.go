package api

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/httpx"
)

// MaxIdempotencyKeyLen is the longest Idempotency-Key accepted
// (docs/platform-api.md, "Limits").
const MaxIdempotencyKeyLen = httpx.MaxIdempotencyKeyLen

// idempotencyTable is where the platform keeps its records (the
// platform_idempotency table of the 0001_boot migration, compact since
// 0034_idempotency_compact: keyed by httpx.IdempotencyID, answers stored
// with references to their scope); the store is the toolkit's one
// (httpx.Idempotency).
var idempotencyTable = httpx.IdempotencyTable{
	Name: "platform_idempotency", ID: "id", Key: "key",
	Hash: "request_hash", Status: "status", Body: "body", Headers: "headers", Created: "created_at",
}

// parseIdempotencyKey validates the Idempotency-Key header values: at most
// one header of 1 to 200 printable ASCII characters. It returns "" when
// none was sent.
func parseIdempotencyKey(values []string) (string, error) {
	k, err := httpx.ParseIdempotencyKey(values, MaxIdempotencyKeyLen)
	if err != nil {
		return "", InvalidParameter(CodeIdempotency, HeaderIdempotencyKey, "%s", err.(*httpx.Error).Message)
	}
	return k, nil
}

// WriteFunc performs a change inside the shared transaction and returns
// what to answer. It must not keep tx.
type WriteFunc func(tx *sql.Tx) (*Result, error)

// Commit performs a change and answers its Result.
//
// Without an Idempotency-Key, write runs in a group-committed transaction
// (durable when Commit answers). With one, the key is scoped to the caller,
// the method and the concrete canonical path: when a result is already
// committed under it, a request with the same body (compared in canonical
// JSON form) gets that result again with Idempotent-Replayed: true and
// write does not run; a different body answers 409
// PF-IDEMPOTENCY-CONFLICT. Otherwise write runs and its result is stored
// in the same transaction as the change, so a result is replayed exactly
// when the change committed. Errors returned by write are not stored.
//
// after, when not nil, runs once the change has committed, before Commit
// answers (e.g. to invalidate caches); it must be quick and must not write.
func (c *Call) Commit(write WriteFunc, after func()) error {
	db := c.api.opts.DB
	if db == nil {
		return errors.New("api: Commit needs Options.DB")
	}
	ctx := c.Context()
	if c.idemKey == "" {
		var res *Result
		err := db.WriteThen(ctx, func(tx *sql.Tx) error {
			var err error
			res, err = write(tx)
			return err
		}, after)
		if err != nil {
			return err
		}
		return c.Respond(res)
	}
	if c.Caller == nil {
		return errors.New("api: idempotency keys need an authenticated caller")
	}
	body, err := c.Body()
	if err != nil {
		return err
	}
	sum := sha256.Sum256(httpx.CanonicalJSON(body))
	hash := sum[:]
	principal := c.Caller.Principal.ID
	scope := c.R.Method + " " + fill(c.route.CanonicalPath(), c.Params)

	// A record older than the retention is expired even while it waits for
	// the hourly prune: the change runs again and replaces it.
	idem := c.api.idem
	if rec, err := idem.Lookup(ctx, db.Reader(), principal, scope, c.idemKey); err != nil {
		return err
	} else if rec != nil {
		return c.replay(rec, hash)
	}
	var stored, found *httpx.IdemRecord
	err = db.WriteThen(ctx, func(tx *sql.Tx) error {
		rec, err := idem.Lookup(ctx, tx, principal, scope, c.idemKey)
		if err != nil || rec != nil {
			found = rec
			return err
		}
		res, err := write(tx)
		if err != nil {
			return err
		}
		data, err := json.Marshal(res.Body)
		if err != nil {
			return fmt.Errorf("api: encode result: %w", err)
		}
		rec = &httpx.IdemRecord{Hash: hash, Status: res.status(c.route), Body: data, Headers: res.headers()}
		if err := idem.Save(ctx, tx, principal, scope, c.idemKey, *rec); err != nil {
			return fmt.Errorf("api: %w", err)
		}
		stored = rec
		return nil
	}, func() {
		if stored != nil && after != nil {
			after()
		}
	})
	if err != nil {
		return err
	}
	if found != nil {
		return c.replay(found, hash)
	}
	c.writeRaw(stored.Status, stored.Body, stored.Headers)
	return nil
}

func (c *Call) replay(rec *httpx.IdemRecord, hash []byte) error {
	if !rec.Matches(hash) {
		return Conflict(CodeIdempotencyConflict, "the %s was already used for a request with a different body", HeaderIdempotencyKey)
	}
	h := map[string]string{HeaderReplayed: "true"}
	for k, v := range rec.Headers {
		h[k] = v
	}
	c.writeRaw(rec.Status, rec.Body, h)
	return nil
}

// PruneIdempotency deletes idempotency records committed before cutoff and
// reports how many it removed. A retry after that re-executes the change.
func PruneIdempotency(ctx context.Context, tx *sql.Tx, cutoff time.Time) (int64, error) {
	n, err := httpx.NewIdempotency(idempotencyTable, nil, nil).PruneTx(ctx, tx, cutoff, 0)
	if err != nil {
		return 0, fmt.Errorf("api: %w", err)
	}
	return n, nil
}
