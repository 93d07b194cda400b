package httpx

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// This file is the one idempotency store of the daemon's surfaces
// (docs/platform-api.md "Idempotency", docs/bridge-api.md "Idempotency"):
// the first committed answer to (owner, scope, key) is kept with the hash of
// its request (each surface hashes its requests in canonical form); a repeat with the same request gets the same answer, another
// request under the key is a conflict, and a record older than the
// retention counts as absent (it is replaced, and pruned in chunks).
// Each surface keeps its records in its own table, described by
// IdempotencyTable; the rules are here once.

// MaxIdempotencyKeyLen is the longest Idempotency-Key the platform accepts
// (docs/platform-api.md, "Limits").
const MaxIdempotencyKeyLen = 200

// IdempotencyTable names a surface's table and columns. Owner, Scope and
// Key form the primary key; Created holds the commit time as Time encodes
// it (and must sort in time order); Headers is optional ("": none).
//
// A compact table (ID set) has no owner and scope columns: its primary key
// ID holds IdempotencyID(owner, scope, key), and its answers are stored
// with the owner and the scope's path (and the path's long segments, such
// as the ids in it) replaced by one-byte references, since run views and
// Location headers repeat them (docs/retention.md).
type IdempotencyTable struct {
	Name    string
	ID      string // compact tables: the hash key (BLOB); Owner and Scope are then unused
	Owner   string // the principal or client the key belongs to
	Scope   string // method and concrete path
	Key     string
	Hash    string // hash of the request (BLOB)
	Status  string
	Body    string // the answer, packed (store.Pack)
	Headers string // the answer's headers as a JSON object, or ""
	Created string
	// Time encodes a commit time as stored (Unix milliseconds by default).
	Time func(time.Time) any
}

// IdemRecord is a committed answer.
type IdemRecord struct {
	Hash    []byte
	Status  int
	Body    []byte
	Headers map[string]string
}

// Matches reports whether the record was committed for one of hashes (a
// surface that changed how it hashes requests accepts the old hash too).
func (r *IdemRecord) Matches(hashes ...[]byte) bool {
	for _, h := range hashes {
		if bytes.Equal(r.Hash, h) {
			return true
		}
	}
	return false
}

// Idempotency keeps the idempotency records of one table.
type Idempotency struct {
	t         IdempotencyTable
	retention func() time.Duration
	now       func() time.Time
	lookup    string
	save      string
}

// NewIdempotency returns the store of table t. retention says how long an
// answer is replayed (it is read at each use, so a configuration can
// change it); now is the clock.
func NewIdempotency(t IdempotencyTable, retention func() time.Duration, now func() time.Time) *Idempotency {
	if t.Time == nil {
		t.Time = func(at time.Time) any { return at.UnixMilli() }
	}
	if now == nil {
		now = time.Now
	}
	hdrSel, hdrCol, hdrVal, hdrSet := ", ''", "", "", ""
	if t.Headers != "" {
		hdrSel = ", " + t.Headers
		hdrCol = ", " + t.Headers
		hdrVal = ", ?"
		hdrSet = ", " + t.Headers + " = excluded." + t.Headers
	}
	s := &Idempotency{t: t, retention: retention, now: now}
	if t.ID != "" {
		s.lookup = fmt.Sprintf(`SELECT %s, %s, %s%s FROM %s WHERE %s = ? AND %s = ? AND %s >= ?`,
			t.Hash, t.Status, t.Body, hdrSel, t.Name, t.ID, t.Key, t.Created)
		s.save = fmt.Sprintf(`INSERT INTO %s(%s, %s, %s, %s, %s%s, %s) VALUES (?, ?, ?, ?, ?%s, ?)
		ON CONFLICT (%s) DO UPDATE SET %s = excluded.%s, %s = excluded.%s, %s = excluded.%s, %s = excluded.%s%s, %s = excluded.%s`,
			t.Name, t.ID, t.Key, t.Hash, t.Status, t.Body, hdrCol, t.Created, hdrVal,
			t.ID, t.Key, t.Key, t.Hash, t.Hash, t.Status, t.Status, t.Body, t.Body, hdrSet, t.Created, t.Created)
		return s
	}
	s.lookup = fmt.Sprintf(`SELECT %s, %s, %s%s FROM %s WHERE %s = ? AND %s = ? AND %s = ? AND %s >= ?`,
		t.Hash, t.Status, t.Body, hdrSel, t.Name, t.Owner, t.Scope, t.Key, t.Created)
	// ON CONFLICT replaces an expired record under the same key.
	s.save = fmt.Sprintf(`INSERT INTO %s(%s, %s, %s, %s, %s, %s%s, %s) VALUES (?, ?, ?, ?, ?, ?%s, ?)
		ON CONFLICT (%s, %s, %s) DO UPDATE SET %s = excluded.%s, %s = excluded.%s, %s = excluded.%s%s, %s = excluded.%s`,
		t.Name, t.Owner, t.Scope, t.Key, t.Hash, t.Status, t.Body, hdrCol, t.Created, hdrVal,
		t.Owner, t.Scope, t.Key, t.Hash, t.Hash, t.Status, t.Status, t.Body, t.Body, hdrSet, t.Created, t.Created)
	return s
}

// Cutoff is the commit time before which a record has expired.
func (s *Idempotency) Cutoff() time.Time { return s.now().Add(-s.retention()) }

// Lookup returns the unexpired record of (owner, scope, key), or nil; q is
// the reader pool or the change's transaction.
func (s *Idempotency) Lookup(ctx context.Context, q store.Querier, owner, scope, key string) (*IdemRecord, error) {
	var rec IdemRecord
	var body []byte
	var hdr string
	args := []any{owner, scope, key, s.t.Time(s.Cutoff())}
	if s.t.ID != "" {
		args = []any{IdempotencyID(owner, scope, key), key, s.t.Time(s.Cutoff())}
	}
	err := q.QueryRowContext(ctx, s.lookup, args...).Scan(&rec.Hash, &rec.Status, &body, &hdr)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read idempotency record: %w", err)
	}
	if rec.Body, err = store.Unpack(body); err != nil {
		return nil, fmt.Errorf("read idempotency record: %w", err)
	}
	var refs []string
	if s.t.ID != "" {
		refs = answerRefs(owner, scope)
	}
	if rec.Body, err = expandAnswer(rec.Body, refs); err != nil {
		return nil, fmt.Errorf("read idempotency record: %w", err)
	}
	if hdr != "" {
		raw, err := expandAnswer([]byte(hdr), refs)
		if err != nil {
			return nil, fmt.Errorf("read idempotency record: %w", err)
		}
		if err := json.Unmarshal(raw, &rec.Headers); err != nil {
			return nil, fmt.Errorf("read idempotency record: %w", err)
		}
	}
	if rec.Status < 200 || rec.Status > 299 {
		return nil, fmt.Errorf("idempotency record with status %d", rec.Status)
	}
	return &rec, nil
}

// Save stores rec under (owner, scope, key) in tx, the transaction of the
// change it answers, so an answer is replayed exactly when the change
// committed.
func (s *Idempotency) Save(ctx context.Context, tx *sql.Tx, owner, scope, key string, rec IdemRecord) error {
	args := []any{owner, scope, key, rec.Hash, rec.Status, store.Pack(rec.Body)}
	var refs []string
	if s.t.ID != "" {
		refs = answerRefs(owner, scope)
		args = []any{IdempotencyID(owner, scope, key), key, rec.Hash, rec.Status, store.Pack(compactAnswer(rec.Body, refs))}
	}
	if s.t.Headers != "" {
		hdr, err := json.Marshal(rec.Headers)
		if err != nil {
			return fmt.Errorf("store idempotency record: %w", err)
		}
		if rec.Headers == nil {
			hdr = []byte("{}")
		}
		args = append(args, string(compactAnswer(hdr, refs)))
	}
	args = append(args, s.t.Time(s.now()))
	if _, err := tx.ExecContext(ctx, s.save, args...); err != nil {
		return fmt.Errorf("store idempotency record: %w", err)
	}
	return nil
}

// PruneTx deletes at most limit records committed before cutoff in tx
// (limit <= 0: all) and reports how many went.
func (s *Idempotency) PruneTx(ctx context.Context, tx *sql.Tx, cutoff time.Time, limit int) (int64, error) {
	t := s.t
	q := fmt.Sprintf(`DELETE FROM %s WHERE %s < ?`, t.Name, t.Created)
	args := []any{t.Time(cutoff)}
	if limit > 0 && t.ID != "" {
		q = fmt.Sprintf(`DELETE FROM %s WHERE %s IN (SELECT %s FROM %s WHERE %s < ? LIMIT ?)`,
			t.Name, t.ID, t.ID, t.Name, t.Created)
		args = append(args, limit)
	} else if limit > 0 {
		// Row values, not rowid: a table may be WITHOUT ROWID.
		q = fmt.Sprintf(`DELETE FROM %s WHERE (%s, %s, %s) IN (SELECT %s, %s, %s FROM %s WHERE %s < ? LIMIT ?)`,
			t.Name, t.Owner, t.Scope, t.Key, t.Owner, t.Scope, t.Key, t.Name, t.Created)
		args = append(args, limit)
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("prune idempotency records: %w", err)
	}
	return res.RowsAffected()
}

// Prune deletes every expired record, limit per write transaction of db so
// a prune never holds the shared writer for long, and reports how many
// went.
func (s *Idempotency) Prune(ctx context.Context, db *store.DB, limit int) (int64, error) {
	cutoff := s.Cutoff()
	var total int64
	for {
		var n int64
		err := db.Write(ctx, func(tx *sql.Tx) error {
			var err error
			n, err = s.PruneTx(ctx, tx, cutoff, limit)
			return err
		})
		total += n
		if err != nil {
			return total, err
		}
		if limit <= 0 || n < int64(limit) {
			return total, nil
		}
	}
}

// ParseIdempotencyKey validates the Idempotency-Key header values: at most
// one header of 1 to max printable ASCII characters. It returns "" when
// none was sent, and an EINVALID *Error saying what is wrong otherwise.
func ParseIdempotencyKey(values []string, max int) (string, error) {
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", Errorf(EINVALID, "send exactly one Idempotency-Key header")
	}
	k := values[0]
	if len(k) == 0 || len(k) > max {
		return "", Errorf(EINVALID, "the Idempotency-Key header must have 1 to %d characters", max)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return "", Errorf(EINVALID, "the Idempotency-Key header must be printable ASCII")
		}
	}
	return k, nil
}
