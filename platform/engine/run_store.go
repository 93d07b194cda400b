package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// errNotFound is returned by reads that find no row.
var errNotFound = errors.New("engine: not found")

// CodeLegacyUnavailable: a run whose stored state this version cannot show
// (another state format, or undecodable).
const CodeLegacyUnavailable = "PF-LEGACY-UNAVAILABLE"

// errLegacy is returned (with the row, Legacy set) by reads of a run whose
// state cannot be shown; routes answer it as 409 PF-LEGACY-UNAVAILABLE,
// and only cancellation works on such a run (cancelLegacy).
var errLegacy = &api.Error{Code: CodeLegacyUnavailable,
	Message: "the run was written by another version and its state cannot be shown; it can still be cancelled"}

// runRow is a stored run.
type runRow struct {
	ID, Tenant, Project, Environment, ActivationID string
	ParentRunID                                    *string
	State                                          kernel.State
	CorrelationKey, BusinessKey                    *string
	CreatedAt, UpdatedAt                           time.Time
	CreatedBy                                      string
	PublishedVersionID                             string
	// CallerRunID and CallerChildID link a child run to the workflow step
	// that started it.
	CallerRunID, CallerChildID *string
	Paused, Test               bool
	// Archived: the run's history is packed in an archive (archive.go).
	Archived bool
	// Legacy: the stored state could not be read (see errLegacy); State
	// then holds only the run id, status and sequence of the row.
	Legacy bool
	// Key is the run's run_key (migration 0037_run_keys) once read or
	// inserted, 0 before: its events and log lines bind it instead of
	// looking it up by id per row.
	Key int64
}

const runCols = `r.id, r.tenant_id, r.project_id, r.environment_id, r.activation_id, r.parent_run_id, r.state,
	r.correlation_key, r.business_key, r.created_at, r.updated_at, r.created_by,
	COALESCE(r.published_version_id, a.published_version_id), r.caller_run_id, r.caller_child_id, r.paused, r.test,
	r.status, r.seq, r.archived_at IS NOT NULL, r.run_key`

const runFrom = ` FROM platform_runs r JOIN platform_activations a ON a.id = r.activation_id`

func (sl sealer) scanRun(sc interface{ Scan(...any) error }) (runRow, error) {
	var r runRow
	var parent, corr, biz, caller, callerChild sql.NullString
	var state, status string
	var created, updated, seq int64
	var key sql.NullInt64 // the column is nullable (0037_run_keys); NULL: looked up by id
	if err := sc.Scan(&r.ID, &r.Tenant, &r.Project, &r.Environment, &r.ActivationID, &parent, &state, &corr, &biz,
		&created, &updated, &r.CreatedBy, &r.PublishedVersionID, &caller, &callerChild, &r.Paused, &r.Test, &status, &seq, &r.Archived, &key); err != nil {
		return r, err
	}
	r.Key = key.Int64
	r.CallerRunID, r.CallerChildID = nullable(caller), nullable(callerChild)
	plain, err := sl.open(state, stateAD(r.ID))
	if err == nil {
		plain, err = store.Unpack(plain)
	}
	if err != nil || json.Unmarshal(plain, &r.State) != nil || r.State.Format != kernel.StateFormat {
		r.Legacy = true
		r.State = kernel.State{RunID: r.ID, Status: kernel.Status(status), Seq: seq}
	}
	r.ParentRunID, r.CorrelationKey, r.BusinessKey = nullable(parent), nullable(corr), nullable(biz)
	r.CreatedAt, r.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return r, nil
}

func nullable(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// getRun reads a run of the environment ("" for any environment).
func (s *Service) getRun(ctx context.Context, q store.Querier, env, id string) (runRow, error) {
	query := `SELECT ` + runCols + runFrom + ` WHERE r.id = ?`
	args := []any{id}
	if env != "" {
		query += ` AND r.environment_id = ?`
		args = append(args, env)
	}
	r, err := s.seal.scanRun(q.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound
	}
	if err != nil {
		return r, fmt.Errorf("engine: read run: %w", err)
	}
	if r.Legacy {
		return r, errLegacy
	}
	return r, nil
}

// insertRun stores a new run, before its started event, and sets its key,
// so the transaction's events and log lines name the run by it.
func insertRun(ctx context.Context, tx *sql.Tx, r *runRow) error {
	key, err := insertRunState(ctx, tx, *r, "running", "{}", 1, false)
	if err == nil {
		r.Key = key
	}
	return err
}

// insertRunState stores a new run with its status, stored state, sequence
// and inline-work flag. Its run_key, the integer its log lines name it by
// (migration 0037_run_keys), is one more than the largest
// (platform_runs_key); it is answered.
func insertRunState(ctx context.Context, tx *sql.Tx, r runRow, status string, state any, seq int64, work bool) (int64, error) {
	var key int64
	err := tx.QueryRowContext(ctx, `INSERT INTO platform_runs(id, tenant_id, project_id, environment_id, activation_id, parent_run_id,
		status, state, seq, needs_work, correlation_key, business_key, created_at, updated_at, created_by,
		published_version_id, caller_run_id, caller_child_id, test, run_key)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
		(SELECT coalesce(max(run_key), 0) + 1 FROM platform_runs)) RETURNING run_key`,
		r.ID, r.Tenant, r.Project, r.Environment, r.ActivationID, r.ParentRunID, status, state, seq, work, r.CorrelationKey, r.BusinessKey,
		store.Millis(r.CreatedAt), store.Millis(r.UpdatedAt), r.CreatedBy, optional(r.PublishedVersionID), r.CallerRunID, r.CallerChildID, r.Test).Scan(&key)
	if err != nil {
		return 0, fmt.Errorf("engine: insert run: %w", err)
	}
	return key, nil
}

// eventEntry is an accepted event to append, encoded as stored.
type eventEntry struct {
	seq                    int64
	kind, payload, records string
	at                     time.Time
}

// encodeEvent encodes the accepted event e of run id with its records as
// they are stored. sealed: the event is stored sealed (the run's program
// holds secrets).
func (s *Service) encodeEvent(id string, e kernel.Event, effects []kernel.Effect, sealed bool) (eventEntry, error) {
	plain, err := json.Marshal(e)
	if err != nil {
		return eventEntry{}, fmt.Errorf("engine: encode event: %w", err)
	}
	// An unsealed payload and the records are stored compact
	// (event_codec.go); a sealed payload is stored whole.
	if !sealed {
		plain = compactPayload(plain, e.Seq, e.At, string(e.Kind), id)
	}
	var eventID []byte // the id the stored payload starts with, if any
	if !sealed {
		eventID = payloadEventID(plain)
	}
	payload, err := s.seal.maybe(sealed, plain, eventAD(id, e.Seq))
	if err != nil {
		return eventEntry{}, err
	}
	// Each record is encoded on its own (the array's JSON is their
	// concatenation), so compactRecords needs no parse.
	var records [][]byte
	for _, ef := range effects {
		if ef.Kind == kernel.EffectRecord && ef.Record != nil {
			raw, err := json.Marshal(ef.Record)
			if err != nil {
				return eventEntry{}, fmt.Errorf("engine: encode records: %w", err)
			}
			records = append(records, raw)
		}
	}
	return eventEntry{seq: e.Seq, kind: string(e.Kind), payload: payload, records: string(compactRecords(records, e.Seq, e.At, eventID)), at: e.At}, nil
}

// insertKeyedEvents appends events of run id in tx, eventRowsPerInsert
// rows a statement (one statement for a run's usual events; SQLite
// refuses a statement with more than 32,766 variables), naming the run by
// key, its run_key if known (runRow.Key), else 0 (looked up by id).
func insertKeyedEvents(ctx context.Context, tx *sql.Tx, id string, key int64, events []eventEntry) error {
	row, ref := `(`+runKeyExpr(key)+`, ?, ?, ?, ?, ?)`, runKeyArg(id, key)
	for len(events) > 0 {
		n := min(len(events), eventRowsPerInsert)
		args := make([]any, 0, 6*n)
		for _, e := range events[:n] {
			args = append(args, ref, e.seq, e.kind, e.payload, e.records, store.Millis(e.at))
		}
		// An event names its run by run_key (migration 0038_run_event_keys),
		// bound if known, else read from the run's row: the row must be
		// stored first, in tx (a missing row leaves run_key NULL, which
		// the table refuses).
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_run_events(run_key, seq, kind, payload, records, at) VALUES `+
			rowsText(row, n), args...); err != nil {
			return fmt.Errorf("engine: append event: %w", err)
		}
		events = events[n:]
	}
	return nil
}

// eventRowsPerInsert and outboxRowsPerInsert bound a multi-row INSERT's
// variables (6 and 5 a row) well under SQLite's limit.
const (
	eventRowsPerInsert  = 256
	outboxRowsPerInsert = 256
)

// runKeyExpr is the SQL expression of a run's run_key in a row that
// names it: the bound key when known (key > 0), else a lookup by id.
// runKeyArg is the argument it binds.
func runKeyExpr(key int64) string {
	if key > 0 {
		return `?`
	}
	return `(SELECT run_key FROM platform_runs WHERE id = ?)`
}

func runKeyArg(id string, key int64) any {
	if key > 0 {
		return key
	}
	return id
}

// rowsText is the VALUES list of a multi-row INSERT: n times row.
func rowsText(row string, n int) string {
	return strings.Repeat(row+", ", n-1) + row
}

// storeRow stores run id's state st, its inline-work flag and its pending
// timers at at, in tx. prevSeq and prevTimers are what the row and the
// due-timer table hold now; prevSeq fences concurrent writers. sealed:
// the state is stored sealed.
func (s *Service) storeRow(ctx context.Context, tx *sql.Tx, id string, prevSeq int64, prevTimers map[string]*kernel.Timer, st kernel.State, work bool, at time.Time, sealed bool) error {
	state, err := s.encodeState(id, st, sealed)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE platform_runs SET status = ?, state = ?, seq = ?, needs_work = ?, updated_at = ?
		WHERE id = ? AND (seq = ? OR ? = 0)`, string(st.Status), state, st.Seq, work, store.Millis(at), id, prevSeq, prevSeq)
	if err != nil {
		return fmt.Errorf("engine: store state: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("engine: store state: %w", err)
	} else if n != 1 {
		return fmt.Errorf("engine: store state of run %s: it changed concurrently", id)
	}
	return saveTimers(ctx, tx, id, prevTimers, st.Timers)
}

// insertNewRun stores run r, created by this transaction, with its state
// and its timers (see storeRow) in one insert, and sets its Key.
func (s *Service) insertNewRun(ctx context.Context, tx *sql.Tx, r *runRow, work, sealed bool) error {
	state, err := s.encodeState(r.ID, r.State, sealed)
	if err != nil {
		return err
	}
	if r.Key, err = insertRunState(ctx, tx, *r, string(r.State.Status), state, r.State.Seq, work); err != nil {
		return err
	}
	return saveTimers(ctx, tx, r.ID, nil, r.State.Timers)
}

// encodeState is st as run id's row stores it.
func (s *Service) encodeState(id string, st kernel.State, sealed bool) (any, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("engine: encode state: %w", err)
	}
	if !sealed && st.Status.Terminal() {
		// An ended run's state is kept until the run is purged and not
		// rewritten by events: it is stored zstd-packed (scanRun unpacks;
		// docs/retention.md). A live run's state, rewritten at every
		// event, stays plain JSON.
		return store.Pack(plain), nil
	}
	return s.seal.maybe(sealed, plain, stateAD(id))
}

// saveTimers makes the run's rows in the due-timer table those of timers,
// the state's; before, the state's timers were prev. The rows are the
// saved state's timers (less those dropped once due, dropStaleTimers), so
// only the timers that changed are written: most steps change none.
func saveTimers(ctx context.Context, tx *sql.Tx, id string, prev, timers map[string]*kernel.Timer) error {
	for tid, t := range prev {
		if now, ok := timers[tid]; ok && now.Due.Equal(t.Due) {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM platform_run_timers WHERE run_id = ? AND timer_id = ?`, id, tid); err != nil {
			return fmt.Errorf("engine: store timers: %w", err)
		}
	}
	for tid, t := range timers {
		if was, ok := prev[tid]; ok && was.Due.Equal(t.Due) {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_run_timers(run_id, timer_id, due_at) VALUES (?, ?, ?)
			ON CONFLICT(run_id, timer_id) DO UPDATE SET due_at = excluded.due_at`, id, tid, store.Millis(t.Due)); err != nil {
			return fmt.Errorf("engine: store timers: %w", err)
		}
	}
	return nil
}

// clearWork resets the inline-work flag of a run at seq.
func clearWork(ctx context.Context, tx *sql.Tx, id string, seq int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE platform_runs SET needs_work = 0 WHERE id = ? AND seq = ?`, id, seq); err != nil {
		return fmt.Errorf("engine: clear work flag: %w", err)
	}
	return nil
}

// idsWhere lists up to limit run ids of a query with its arguments.
func idsWhere(ctx context.Context, q store.Querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("engine: list runs: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("engine: list runs: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("engine: list runs: %w", err)
	}
	return out, nil
}

// eventRow is one accepted event.
type eventRow struct {
	Seq     int64
	Kind    string
	Payload json.RawMessage
	Records json.RawMessage
	At      time.Time
}

// listEvents reads a run's events after seq in seq order, opened.
func (s *Service) listEvents(ctx context.Context, q store.Querier, id string, after int64, limit int) ([]eventRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, kind, payload, records, at FROM platform_run_events
		WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?) AND seq > ? ORDER BY seq LIMIT ?`, id, after, limit)
	if err != nil {
		return nil, fmt.Errorf("engine: list events: %w", err)
	}
	defer rows.Close()
	var out []eventRow
	for rows.Next() {
		var e eventRow
		var payload, records string
		var at int64
		if err := rows.Scan(&e.Seq, &e.Kind, &payload, &records, &at); err != nil {
			return nil, fmt.Errorf("engine: list events: %w", err)
		}
		e.At = store.FromMillis(at)
		plain, err := s.seal.open(payload, eventAD(id, e.Seq))
		if err == nil {
			plain, err = expandPayload(plain, e.Seq, e.At, e.Kind, id)
		}
		if err != nil {
			return nil, fmt.Errorf("engine: event %d of run %s: %w", e.Seq, id, err)
		}
		recs, err := expandRecords([]byte(records), e.Seq, e.At, []byte(payload))
		if err != nil {
			return nil, fmt.Errorf("engine: event %d of run %s: %w", e.Seq, id, err)
		}
		e.Payload, e.Records = json.RawMessage(plain), json.RawMessage(recs)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("engine: list events: %w", err)
	}
	return out, nil
}

// hasInbox reports whether events are held for run id.
func hasInbox(ctx context.Context, q store.Querier, id string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM platform_run_inbox WHERE run_id = ?)`, id).Scan(&n); err != nil {
		return false, fmt.Errorf("engine: read inbox: %w", err)
	}
	return n == 1, nil
}

// nextHeld reads the oldest event held for run id and its row id.
func (s *Service) nextHeld(ctx context.Context, q store.Querier, id string) (kernel.Event, int64, bool, error) {
	var e kernel.Event
	var row int64
	var raw string
	err := q.QueryRowContext(ctx, `SELECT id, event FROM platform_run_inbox WHERE run_id = ? ORDER BY id LIMIT 1`, id).Scan(&row, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return e, 0, false, nil
	}
	if err != nil {
		return e, 0, false, fmt.Errorf("engine: read inbox: %w", err)
	}
	plain, err := s.seal.open(raw, inboxAD(id))
	if err != nil {
		return e, 0, false, fmt.Errorf("engine: held event of run %s: %w", id, err)
	}
	if err := json.Unmarshal(plain, &e); err != nil {
		return e, 0, false, fmt.Errorf("engine: held event of run %s: %w", id, err)
	}
	return e, row, true, nil
}

// requireEnvironment answers 404 unless the path's environment exists.
func requireEnvironment(ctx context.Context, q store.Querier, sc auth.Scope) error {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_environments WHERE id = ? AND project_id = ? AND tenant_id = ?`,
		sc.Environment, sc.Project, sc.Tenant).Scan(&n); err != nil {
		return fmt.Errorf("engine: read environment: %w", err)
	}
	if n == 0 {
		return notFound("environment")
	}
	return nil
}

// activationInfo is what a run start reads of its activation.
type activationInfo struct {
	status, versionID string
	defaults          map[string]json.RawMessage
}

// readActivation reads an activation of the environment.
func readActivation(ctx context.Context, q store.Querier, env, id string) (activationInfo, error) {
	var status, version, defaults sql.NullString
	err := q.QueryRowContext(ctx, `SELECT status, published_version_id, input_defaults FROM platform_activations
		WHERE id = ? AND environment_id = ?`, id, env).Scan(&status, &version, &defaults)
	if errors.Is(err, sql.ErrNoRows) {
		return activationInfo{}, invalid("/activation_id", "the environment has no activation with that id")
	}
	if err != nil {
		return activationInfo{}, fmt.Errorf("engine: read activation: %w", err)
	}
	return activationFrom(status, version, defaults)
}

// readStartActivation is requireEnvironment and readActivation in one
// query (a run start's reads): err is requireEnvironment's answer, and
// aErr readActivation's, which a start answers after its other checks.
func readStartActivation(ctx context.Context, q store.Querier, sc auth.Scope, id string) (a activationInfo, aErr, err error) {
	var status, version, defaults sql.NullString
	err = q.QueryRowContext(ctx, `SELECT a.status, a.published_version_id, a.input_defaults FROM platform_environments e
		LEFT JOIN platform_activations a ON a.id = ? AND a.environment_id = e.id
		WHERE e.id = ? AND e.project_id = ? AND e.tenant_id = ?`, id, sc.Environment, sc.Project, sc.Tenant).Scan(&status, &version, &defaults)
	if errors.Is(err, sql.ErrNoRows) {
		return a, nil, notFound("environment")
	}
	if err != nil {
		return a, nil, fmt.Errorf("engine: read environment and activation: %w", err)
	}
	if !status.Valid {
		return a, invalid("/activation_id", "the environment has no activation with that id"), nil
	}
	a, aErr = activationFrom(status, version, defaults)
	return a, aErr, nil
}

// activationFrom is the activationInfo of a row's columns.
func activationFrom(status, version, defaults sql.NullString) (activationInfo, error) {
	a := activationInfo{status: status.String, versionID: version.String}
	if err := json.Unmarshal([]byte(defaults.String), &a.defaults); err != nil {
		return a, fmt.Errorf("engine: stored input defaults: %w", err)
	}
	if a.status != "active" {
		return a, refused(CodeConflict, "the activation is retired; start runs of an active activation")
	}
	return a, nil
}

// storeLegacyCancel replaces the state of legacy run id by raw, a
// cancelled state, at now: its scheduler rows go, and its incidents end
// with it, as any run's do.
func storeLegacyCancel(ctx context.Context, tx *sql.Tx, id string, raw []byte, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE platform_runs SET status = 'cancelled', state = ?, needs_work = 0, paused = 0, updated_at = ?
		WHERE id = ?`, string(raw), store.Millis(now), id); err != nil {
		return fmt.Errorf("engine: cancel legacy run: %w", err)
	}
	if err := forgetWork(ctx, tx, id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE platform_run_incidents SET status = 'resolved' WHERE run_id = ?`, id); err != nil {
		return fmt.Errorf("engine: close incidents of legacy run: %w", err)
	}
	return nil
}

// dropLegacyWork takes legacy run id out of the loop (skipLegacy).
func dropLegacyWork(ctx context.Context, tx *sql.Tx, id string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE platform_runs SET needs_work = 0 WHERE id = ?`, id); err != nil {
		return fmt.Errorf("engine: clear work flag: %w", err)
	}
	return forgetWork(ctx, tx, id)
}

// setPausedFlag stores run id's paused flag; resuming flags the run for
// the loop (held events, late timers).
func setPausedFlag(ctx context.Context, tx *sql.Tx, id string, on bool) error {
	if _, err := tx.ExecContext(ctx, `UPDATE platform_runs SET paused = ?, needs_work = CASE WHEN ? THEN needs_work ELSE 1 END WHERE id = ?`,
		on, on, id); err != nil {
		return fmt.Errorf("engine: store paused flag: %w", err)
	}
	return nil
}

// forgetWork deletes the scheduler's rows of run id: timers, held events,
// dispatches and worker tasks.
func forgetWork(ctx context.Context, tx *sql.Tx, id string) error {
	for _, table := range []string{"platform_run_timers", "platform_run_inbox", "platform_task_dispatches", "platform_worker_tasks"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE run_id = ?`, id); err != nil {
			return fmt.Errorf("engine: forget work of run %s: %w", id, err)
		}
	}
	return nil
}

// versionWorkflow answers the workflow id and version of published
// version id.
func versionWorkflow(ctx context.Context, q store.Querier, id string) (string, int, error) {
	var wf string
	var version int
	if err := q.QueryRowContext(ctx, `SELECT definition_id, version FROM platform_definition_versions WHERE id = ?`, id).Scan(&wf, &version); err != nil {
		return "", 0, fmt.Errorf("engine: read workflow version %s: %w", id, err)
	}
	return wf, version, nil
}

// newestActiveActivation answers the newest active activation of workflow
// in environment env and the version it runs (found false: none).
func newestActiveActivation(ctx context.Context, q store.Querier, env, workflow string) (id string, version int, found bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT id, workflow_version FROM platform_activations
		WHERE environment_id = ? AND workflow_id = ? AND status = 'active' ORDER BY created_at DESC, id DESC LIMIT 1`,
		env, workflow).Scan(&id, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("engine: read activations: %w", err)
	}
	return id, version, true, nil
}

// countPublished counts the published versions of workflow in project
// (version, when not 0, only that one).
func countPublished(ctx context.Context, q store.Querier, project, workflow string, version int) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_definition_versions
		WHERE project_id = ? AND kind = 'workflow' AND definition_id = ? AND (? = 0 OR version = ?)`,
		project, workflow, version, version).Scan(&n); err != nil {
		return 0, fmt.Errorf("engine: read workflow versions: %w", err)
	}
	return n, nil
}

// activationVersion answers the published version activation id of
// environment env runs.
func activationVersion(ctx context.Context, q store.Querier, env, id string) (string, error) {
	var version string
	if err := q.QueryRowContext(ctx, `SELECT published_version_id FROM platform_activations WHERE id = ? AND environment_id = ?`,
		id, env).Scan(&version); err != nil {
		return "", fmt.Errorf("engine: read activation %s: %w", id, err)
	}
	return version, nil
}

// dispatchProgram answers the project and published version of the run
// that dispatched task id (errNotFound without the dispatch).
func dispatchProgram(ctx context.Context, q store.Querier, id string) (project, version string, err error) {
	err = q.QueryRowContext(ctx, `SELECT r.project_id, COALESCE(r.published_version_id, a.published_version_id)
		FROM platform_task_dispatches d JOIN platform_runs r ON r.id = d.run_id JOIN platform_activations a ON a.id = r.activation_id
		WHERE d.task_id = ?`, id).Scan(&project, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", errNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("engine: read dispatch: %w", err)
	}
	return project, version, nil
}
