package callbacks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

const execColumns = `id, delivery_id, configuration_id, configuration_name, subscription_id, event_id, event_type,
	attempt, max_attempts, state, trigger, retry_of, scheduled_at, started_at, finished_at, duration_ms,
	request_method, request_url, request_headers, request_body_bytes, response_status, response_excerpt,
	response_truncated, error_code, error_message, next_attempt_at, created_at, updated_at`

var execResource = &resource{
	name:  "callback-executions",
	table: "callback_executions",
	fields: map[string]field{
		"id":                {col: "id", kind: kString, sortable: true},
		"deliveryId":        {col: "delivery_id", kind: kString},
		"configurationId":   {col: "configuration_id", kind: kString},
		"configurationName": {col: "configuration_name", kind: kString, sortable: true},
		"subscriptionId":    {col: "subscription_id", kind: kString},
		"eventId":           {col: "event_seq", kind: kString, ref: "SELECT seq FROM callback_events WHERE id"},
		"eventType":         {col: "event_type", kind: kString, sortable: true},
		"attempt":           {col: "attempt", kind: kInt, sortable: true},
		"state":             {col: "state", kind: kString, sortable: true},
		"trigger":           {col: "trigger", kind: kString},
		"retryOf":           {col: "retry_of", kind: kString},
		"responseStatus":    {col: "response_status", kind: kInt, sortable: true},
		"errorCode":         {col: "error_code", kind: kString},
		"durationMs":        {col: "duration_ms", kind: kInt, sortable: true},
		"scheduledAt":       {col: "scheduled_at", kind: kTime, sortable: true},
		"startedAt":         {col: "started_at", kind: kTime, sortable: true},
		"finishedAt":        {col: "finished_at", kind: kTime, sortable: true},
		"createdAt":         {col: "created_at", kind: kTime, sortable: true},
		"updatedAt":         {col: "updated_at", kind: kTime, sortable: true},
	},
	defaultSort: []SortOrder{{Field: "createdAt", Direction: "DESC"}},
}

func scanExec() ([]any, func() (Execution, error)) {
	var e Execution
	var scheduled, started, finished, duration, next, created, updated int64
	var method, url, headers string
	var bodyBytes, status, truncated int64
	var excerpt, errCode, errMsg string
	dests := []any{&e.ID, &e.DeliveryID, &e.ConfigurationID, &e.ConfigurationName, &e.SubscriptionID, &e.EventID, &e.EventType,
		&e.Attempt, &e.MaxAttempts, &e.State, &e.Trigger, &e.RetryOf, &scheduled, &started, &finished, &duration,
		&method, &url, &headers, &bodyBytes, &status, &excerpt, &truncated, &errCode, &errMsg, &next, &created, &updated}
	return dests, func() (Execution, error) {
		e.ScheduledAt, e.CreatedAt, e.UpdatedAt = store.FromMillis(scheduled), store.FromMillis(created), store.FromMillis(updated)
		e.StartedAt, e.FinishedAt, e.NextAttemptAt = store.OptFromMillis(started), store.OptFromMillis(finished), store.OptFromMillis(next)
		if started != 0 && finished != 0 {
			d := duration
			e.DurationMs = &d
		}
		if method != "" {
			e.Request = &ExecutionRequest{Method: method, URL: url, Headers: map[string]string{}, BodyBytes: int(bodyBytes)}
			_ = json.Unmarshal([]byte(headers), &e.Request.Headers)
		}
		if status != 0 {
			e.Response = &ExecutionResponse{Status: int(status), BodyExcerpt: excerpt, BodyTruncated: truncated != 0}
		}
		if errCode != "" {
			e.Error = &ExecutionError{Code: errCode, Message: errMsg}
		}
		return e, nil
	}
}

func getExecution(ctx context.Context, q store.Querier, id string) (Execution, error) {
	dests, build := scanExec()
	err := q.QueryRowContext(ctx, `SELECT `+execColumns+` FROM callback_executions WHERE id = ?`, id).Scan(dests...)
	if errors.Is(err, sql.ErrNoRows) {
		return Execution{}, errNotFound("callback execution " + id)
	}
	if err != nil {
		return Execution{}, fmt.Errorf("callbacks: read execution: %w", err)
	}
	return build()
}

const insertEventSQL = `INSERT OR IGNORE INTO callback_events (id, event_type, topic, payload, received_at) VALUES (?, ?, ?, ?, ?)`

const insertExecSQL = `INSERT OR IGNORE INTO callback_executions (id, delivery_id, configuration_id, configuration_name,
	subscription_id, event_seq, event_id, event_type, attempt, max_attempts, state, trigger, retry_of, scheduled_at, created_at, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'PENDING', ?, ?, ?, ?, ?)`

// insertJob stores a PENDING attempt; it reports false when the unique
// first-attempt index says the delivery exists already.
func insertJob(stmt *sql.Stmt, j *job, now time.Time) (bool, error) {
	res, err := stmt.Exec(j.execID, j.deliveryID, j.configID, j.configName, j.subscriptionID, j.eventSeq, j.eventID, j.eventType,
		j.attempt, j.maxAttempts, j.trigger, j.retryOf, store.Millis(j.due), store.Millis(now), store.Millis(now))
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// eventsReceived reads the stored events received in [since, until], in
// the order they came, at most limit of them (truncated: more follow), with
// their seqs and the last one's receipt time (Unix milliseconds).
func (s *Service) eventsReceived(ctx context.Context, since, until time.Time, limit int) (events []Event, seqs []int64, last int64, truncated bool, err error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT seq, id, event_type, topic, payload, received_at FROM callback_events
		WHERE received_at >= ? AND received_at <= ? ORDER BY received_at, id LIMIT ?`, store.Millis(since), store.Millis(until), limit+1)
	if err != nil {
		return nil, nil, 0, false, err
	}
	defer rows.Close()
	for rows.Next() {
		if len(events) == limit {
			truncated = true
			break
		}
		var ev Event
		var seq int64
		var payload []byte
		if err := rows.Scan(&seq, &ev.ID, &ev.Type, &ev.Topic, &payload, &last); err != nil {
			return nil, nil, 0, false, err
		}
		ev.Payload = payload
		events = append(events, ev)
		seqs = append(seqs, seq)
	}
	return events, seqs, last, truncated, rows.Err()
}

// insertJobs stores the PENDING attempts of events stored already (their
// eventSeq set), in one write.
func (s *Service) insertJobs(ctx context.Context, jobs []*job, now time.Time) error {
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.Prepare(insertExecSQL)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, j := range jobs {
			if _, err := insertJob(stmt, j, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// execution reads one execution (404 when unknown).
func (s *Service) execution(ctx context.Context, id string) (Execution, error) {
	return getExecution(ctx, s.db.Reader(), id)
}

// persistJobs stores an event (once) and its new attempts in one write and
// returns the attempts that were new.
func (s *Service) persistJobs(ctx context.Context, ev Event, jobs []*job) ([]*job, error) {
	var fresh []*job
	now := s.nowMs()
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		fresh = fresh[:0]
		seq, err := storeEvent(tx, ev, now)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			j.eventSeq = seq
		}
		stmt, err := tx.Prepare(insertExecSQL)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, j := range jobs {
			ok, err := insertJob(stmt, j, now)
			if err != nil {
				return err
			}
			if ok {
				fresh = append(fresh, j)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("callbacks: store event %s: %w", ev.ID, err)
	}
	return fresh, nil
}

// storeEvent stores ev once and returns its sequence number.
func storeEvent(tx *sql.Tx, ev Event, now time.Time) (int64, error) {
	res, err := tx.Exec(insertEventSQL, ev.ID, ev.Type, ev.Topic, []byte(ev.Payload), store.Millis(now))
	if err != nil {
		return 0, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return res.LastInsertId()
	}
	var seq int64
	err = tx.QueryRow(`SELECT seq FROM callback_events WHERE id = ?`, ev.ID).Scan(&seq)
	return seq, err
}

// loadOpenJobs reads the attempts still to be made: the persisted retry queue.
func (s *Service) loadOpenJobs(ctx context.Context) ([]*job, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT id, delivery_id, configuration_id, configuration_name, subscription_id,
		event_seq, event_id, event_type, attempt, max_attempts, trigger, retry_of, scheduled_at, state
		FROM callback_executions WHERE state IN ('PENDING', 'HELD_CIRCUIT_OPEN') ORDER BY scheduled_at, id`)
	if err != nil {
		return nil, fmt.Errorf("callbacks: load pending executions: %w", err)
	}
	defer rows.Close()
	var out []*job
	for rows.Next() {
		j := &job{}
		var due int64
		var state string
		if err := rows.Scan(&j.execID, &j.deliveryID, &j.configID, &j.configName, &j.subscriptionID, &j.eventSeq, &j.eventID, &j.eventType,
			&j.attempt, &j.maxAttempts, &j.trigger, &j.retryOf, &due, &state); err != nil {
			return nil, fmt.Errorf("callbacks: load pending executions: %w", err)
		}
		j.due = store.FromMillis(due)
		j.held = state == StateHeld
		out = append(out, j)
	}
	return out, rows.Err()
}

// payloadBySeq reads a stored event's payload by sequence number.
func (s *Service) payloadBySeq(ctx context.Context, seq int64, id string) (json.RawMessage, error) {
	var p []byte
	err := s.db.Reader().QueryRowContext(ctx, `SELECT payload FROM callback_events WHERE seq = ?`, seq).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errorf(ENotFoundEventExpired, "the payload of event %s is no longer retained", id)
	}
	if err != nil {
		return nil, fmt.Errorf("callbacks: read event %s: %w", id, err)
	}
	return p, nil
}

// eventPayload reads a stored event's payload by id.
func (s *Service) eventPayload(ctx context.Context, id string) (json.RawMessage, error) {
	var p []byte
	err := s.db.Reader().QueryRowContext(ctx, `SELECT payload FROM callback_events WHERE id = ?`, id).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errorf(ENotFoundEventExpired, "the payload of event %s is no longer retained", id)
	}
	if err != nil {
		return nil, fmt.Errorf("callbacks: read event %s: %w", id, err)
	}
	return p, nil
}

const (
	recordSQL = `UPDATE callback_executions SET state = ?, started_at = ?, finished_at = ?, duration_ms = ?,
		request_method = ?, request_url = ?, request_headers = ?, request_body_bytes = ?, response_status = ?,
		response_excerpt = ?, response_truncated = ?, error_code = ?, error_message = ?, next_attempt_at = ?,
		max_attempts = ?, updated_at = ? WHERE id = ? AND state IN ('PENDING', 'HELD_CIRCUIT_OPEN')`
	holdSQL = `UPDATE callback_executions SET state = 'HELD_CIRCUIT_OPEN', scheduled_at = ?, updated_at = ?
		WHERE id = ? AND state IN ('PENDING', 'HELD_CIRCUIT_OPEN')`
)

// writeOutcomes records a batch of attempt outcomes (and schedules the next
// attempts they call for) in one transaction.
func writeOutcomes(tx *sql.Tx, batch []*outcome, now time.Time) error {
	rec, err := tx.Prepare(recordSQL)
	if err != nil {
		return err
	}
	defer rec.Close()
	var hold, ins *sql.Stmt
	for _, o := range batch {
		if o.state == StateHeld {
			if hold == nil {
				if hold, err = tx.Prepare(holdSQL); err != nil {
					return err
				}
				defer hold.Close()
			}
			if _, err := hold.Exec(store.Millis(o.heldUntil), store.Millis(now), o.job.execID); err != nil {
				return err
			}
			continue
		}
		var method, url, headers string
		var bodyBytes, status int
		var excerpt, errCode, errMsg string
		var truncated bool
		if o.req != nil {
			h, _ := json.Marshal(o.req.Headers)
			method, url, headers, bodyBytes = o.req.Method, o.req.URL, string(h), o.req.BodyBytes
		}
		if o.resp != nil {
			status, excerpt, truncated = o.resp.Status, o.resp.BodyExcerpt, o.resp.BodyTruncated
		}
		if o.err != nil {
			errCode, errMsg = o.err.Code, o.err.Message
		}
		var started, duration, next int64
		if !o.started.IsZero() {
			started, duration = store.Millis(o.started), o.finished.Sub(o.started).Milliseconds()
		}
		if o.next != nil {
			next = store.Millis(o.next.due)
		}
		res, err := rec.Exec(o.state, started, store.Millis(o.finished), duration, method, url, headers, bodyBytes, status,
			excerpt, boolInt(truncated), errCode, errMsg, next, o.maxAttempts, store.Millis(now), o.job.execID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// The row was closed meanwhile (retention, or a duplicate job):
			// do not schedule a follow-up for it.
			o.next = nil
			continue
		}
		if o.next != nil {
			if ins == nil {
				if ins, err = tx.Prepare(insertExecSQL); err != nil {
					return err
				}
				defer ins.Close()
			}
			if _, err := insertJob(ins, o.next, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// pruneBefore removes finished executions and unreferenced events older than cutoff.
func (s *Service) pruneBefore(ctx context.Context, cutoff time.Time) (execs, events int64, err error) {
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM callback_executions WHERE created_at < ? AND state NOT IN ('PENDING', 'HELD_CIRCUIT_OPEN')`, store.Millis(cutoff))
		if err != nil {
			return err
		}
		execs, _ = res.RowsAffected()
		// An event goes once no execution refers to it any more.
		res, err = tx.Exec(`DELETE FROM callback_events WHERE received_at < ? AND NOT EXISTS (
			SELECT 1 FROM callback_executions x WHERE x.event_seq = callback_events.seq)`, store.Millis(cutoff))
		if err != nil {
			return err
		}
		events, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("callbacks: prune: %w", err)
	}
	return execs, events, nil
}

// filterExecutions runs a FilterRequest on the executions.
func (s *Service) filterExecutions(ctx context.Context, req FilterRequest) (*PaginationResponse[Execution], error) {
	return filterWith(ctx, s, execResource, execColumns, scanExec, req)
}
