package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// MaxIdempotencyKeyLen is the longest Idempotency-Key accepted (docs/platform-api.md,
// "Limits").
const MaxIdempotencyKeyLen = 200

// parseIdempotencyKey validates the Idempotency-Key header values: at most
// one header of 1 to 200 printable ASCII characters. It returns "" when
// none was sent.
func parseIdempotencyKey(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", InvalidParameter(CodeIdempotency, HeaderIdempotencyKey, "send exactly one %s header", HeaderIdempotencyKey)
	}
	k := values[0]
	if len(k) == 0 || len(k) > MaxIdempotencyKeyLen {
		return "", InvalidParameter(CodeIdempotency, HeaderIdempotencyKey, "the %s header must have 1 to %d characters", HeaderIdempotencyKey, MaxIdempotencyKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return "", InvalidParameter(CodeIdempotency, HeaderIdempotencyKey, "the %s header must be printable ASCII", HeaderIdempotencyKey)
		}
	}
	return k, nil
}

// WriteFunc performs a change inside the shared transaction and returns
// what to answer. It must not keep tx.
type WriteFunc func(tx *sql.Tx) (*Result, error)

// idemRecord is a committed result stored under an idempotency key.
type idemRecord struct {
	hash    []byte
	status  int
	body    []byte
	headers map[string]string
}

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
	sum := sha256.Sum256(canonicalBody(body))
	hash := sum[:]
	principal := c.Caller.Principal.ID
	scope := c.R.Method + " " + fill(c.route.CanonicalPath(), c.Params)

	// A record older than the retention is expired even while it waits for
	// the hourly prune: the change runs again and replaces it.
	cutoff := c.api.opts.Now().Add(-c.api.opts.IdempotencyRetention).UnixMilli()
	if rec, err := lookupIdempotency(ctx, c.api.opts.DB.Reader(), principal, scope, c.idemKey, cutoff); err != nil {
		return err
	} else if rec != nil {
		return c.replay(rec, hash)
	}
	var stored, found *idemRecord
	err = db.WriteThen(ctx, func(tx *sql.Tx) error {
		rec, err := lookupIdempotency(ctx, tx, principal, scope, c.idemKey, cutoff)
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
		rec = &idemRecord{hash: hash, status: res.status(c.route), body: data, headers: res.headers()}
		hdr, _ := json.Marshal(rec.headers)
		// The body is stored packed (store.Pack); ON CONFLICT replaces an
		// expired record under the same key.
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_idempotency(principal_id, scope, key, request_hash, status, body, headers, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (principal_id, scope, key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status,
				body = excluded.body, headers = excluded.headers, created_at = excluded.created_at`,
			principal, scope, c.idemKey, hash, rec.status, store.Pack(data), string(hdr), c.api.opts.Now().UnixMilli()); err != nil {
			return fmt.Errorf("api: store idempotency record: %w", err)
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
	c.writeRaw(stored.status, stored.body, stored.headers)
	return nil
}

func (c *Call) replay(rec *idemRecord, hash []byte) error {
	if !bytes.Equal(rec.hash, hash) {
		return Conflict(CodeIdempotencyConflict, "the %s was already used for a request with a different body", HeaderIdempotencyKey)
	}
	h := map[string]string{HeaderReplayed: "true"}
	for k, v := range rec.headers {
		h[k] = v
	}
	c.writeRaw(rec.status, rec.body, h)
	return nil
}

// lookupIdempotency reads the record under key committed at or after
// cutoff (Unix milliseconds), or nil.
func lookupIdempotency(ctx context.Context, q store.Querier, principal, scope, key string, cutoff int64) (*idemRecord, error) {
	var rec idemRecord
	var hdr string
	var body []byte
	err := q.QueryRowContext(ctx, `SELECT request_hash, status, body, headers FROM platform_idempotency
		WHERE principal_id = ? AND scope = ? AND key = ? AND created_at >= ?`, principal, scope, key, cutoff).Scan(&rec.hash, &rec.status, &body, &hdr)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("api: read idempotency record: %w", err)
	}
	if rec.body, err = store.Unpack(body); err != nil {
		return nil, fmt.Errorf("api: read idempotency record: %w", err)
	}
	if err := json.Unmarshal([]byte(hdr), &rec.headers); err != nil {
		return nil, fmt.Errorf("api: read idempotency record: %w", err)
	}
	if rec.status < 200 || rec.status > 299 {
		return nil, fmt.Errorf("api: idempotency record with status %d", rec.status)
	}
	return &rec, nil
}

// PruneIdempotency deletes idempotency records committed before cutoff and
// reports how many it removed. A retry after that re-executes the change.
func PruneIdempotency(ctx context.Context, tx *sql.Tx, cutoff time.Time) (int64, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM platform_idempotency WHERE created_at < ?`, cutoff.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("api: prune idempotency records: %w", err)
	}
	return res.RowsAffected()
}
