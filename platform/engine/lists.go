package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
)

// List limits (docs/platform-api.md, "Limits"): run summaries page with the generic
// limit (api.DefaultPageLimit, api.MaxPageLimit); steps and logs with
// their own.
const (
	DefaultStepLogLimit = 200
	MaxStepLogLimit     = 500
	// MaxListRange bounds an explicit time range of a list filter.
	MaxListRange = 400 * 24 * time.Hour
	// maxFilterLen bounds a free-text filter value (keys, types).
	maxFilterLen = 200
)

// RunSummary is a run in the run list: what a run is without its state.
type RunSummary struct {
	ID             string     `json:"id" format:"uuid"`
	ActivationID   string     `json:"activation_id" format:"uuid"`
	Workflow       string     `json:"workflow" doc:"the workflow as id@version"`
	Status         string     `json:"status" doc:"running, waiting, suspended, succeeded, failed, cancelled or timed_out"`
	Paused         bool       `json:"paused"`
	Test           bool       `json:"test"`
	Archived       bool       `json:"archived,omitempty" doc:"the run is archived (listed only with include_archived=true)"`
	ParentRunID    *string    `json:"parent_run_id" format:"uuid" doc:"the retried run"`
	CallerRunID    *string    `json:"caller_run_id" format:"uuid" doc:"the run whose workflow step started this one"`
	CorrelationKey *string    `json:"correlation_key"`
	BusinessKey    *string    `json:"business_key"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at" doc:"the time of the last accepted event"`
	EndedAt        *time.Time `json:"ended_at,omitempty" doc:"once the run has ended: the time of its last accepted event"`
}

// Step is one step instance of a run (one activation of a node).
type Step struct {
	NodeID     string `json:"node_id"`
	Instance   string `json:"instance" doc:"the node id with the forEach iteration suffix"`
	Generation int    `json:"generation" doc:"the node's activation count at the start of this instance"`
	Kind       string `json:"kind" doc:"the step kind (action, agent, decision, workflow, wait, signal, human, forEach, parallel, switch, set, fail, succeed)"`
	Status     string `json:"status" doc:"running, retrying, waiting, suspended, completed, failed, timed_out or cancelled"`
	// WaitingFor is what an active step waits for (task, timer, signal,
	// human, child, join, loop, incident).
	WaitingFor string            `json:"waiting_for,omitempty"`
	Deadline   *time.Time        `json:"deadline,omitempty" doc:"an active step's deadline or due time"`
	StartedAt  time.Time         `json:"started_at"`
	StartedSeq int64             `json:"started_seq" doc:"the accepted event that started the step"`
	EndedAt    *time.Time        `json:"ended_at,omitempty"`
	EndedSeq   int64             `json:"ended_seq,omitempty"`
	Attempts   int               `json:"attempts" doc:"action and agent steps: the attempt the step is on (retries add one); 0 for other steps"`
	LastError  *kernel.TaskError `json:"last_error,omitempty"`
}

// LogEntry is one line of a run's log: a history record or an engine note.
type LogEntry struct {
	ID      int64           `json:"id" doc:"increasing; the after parameter resumes behind it"`
	At      time.Time       `json:"at"`
	Seq     *int64          `json:"seq" doc:"the accepted event the line belongs to"`
	Level   string          `json:"level" doc:"info, warn or error"`
	Type    string          `json:"type" doc:"step_started, step_completed, run_succeeded, event_refused, ..."`
	NodeID  *string         `json:"node_id"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data" doc:"the history record or the note's details (null when none)"`
}

// runStatuses are the values of the status filter.
var runStatuses = []kernel.Status{kernel.StatusRunning, kernel.StatusWaiting, kernel.StatusSuspended, kernel.StatusSucceeded,
	kernel.StatusFailed, kernel.StatusCancelled, kernel.StatusTimedOut}

// logLevels orders the log levels; the level filter is a minimum.
var logLevels = []string{"info", "warn", "error"}

// badCursor answers a cursor that verified but holds no valid position.
func badCursor() error {
	return &Error{Code: CodeValidation, Parameter: "cursor", Message: "the cursor is invalid, or was issued for another list, scope or filters"}
}

// RunFilter selects the runs ListRuns answers (run_summaries.list); the
// zero value of a field does not filter.
type RunFilter struct {
	Scope auth.Scope
	// Statuses are run statuses (runStatuses).
	Statuses []string
	Paused   *bool
	// ActivationID, WorkflowID and WorkflowVersion (with WorkflowID).
	ActivationID    string
	WorkflowID      string
	WorkflowVersion int
	CorrelationKey  string
	BusinessKey     string
	// CreatedAfter and CreatedBefore are exclusive bounds.
	CreatedAfter  *time.Time
	CreatedBefore *time.Time
	IncludeTest   bool
	// IncludeArchived lists archived runs too.
	IncludeArchived bool
	// After is the position to resume behind ("<created ms>/<id>", a
	// cursor's), Limit how many runs to answer.
	After string
	Limit int
}

// ListRuns answers the runs of f.Scope's environment that match f, newest
// first (created_at, then id, descending). PF-NOT-FOUND without the
// environment, PF-VALIDATION (cursor) for a bad position.
func (s *Service) ListRuns(ctx context.Context, f RunFilter) ([]RunSummary, error) {
	rd := s.db.Reader()
	if err := requireEnvironment(ctx, rd, f.Scope); err != nil {
		return nil, err
	}
	var pos *runPosition
	if f.After != "" {
		ms, id, ok := strings.Cut(f.After, "/")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil {
			return nil, badCursor()
		}
		pos = &runPosition{ms: n, id: id}
	}
	return listRunSummaries(ctx, rd, f, pos)
}

// StepQuery selects a page of a run's steps (runs.steps).
type StepQuery struct {
	Scope auth.Scope
	RunID string
	// After is the position to resume behind (PositionedStep.Position).
	After string
	Limit int
}

// PositionedStep is a step with its position in the run's step list.
type PositionedStep struct {
	Step
	Position string
}

// RunSteps answers the step instances of run q.RunID in the order they
// started, derived from its history records and its current state.
func (s *Service) RunSteps(ctx context.Context, q StepQuery) ([]PositionedStep, error) {
	var from stepPos
	if q.After != "" {
		var ok bool
		if from, ok = parseStepPos(q.After); !ok {
			return nil, badCursor()
		}
	}
	rd := s.db.Reader()
	r, _, err := s.readRun(ctx, rd, q.Scope, q.RunID)
	if err != nil {
		return nil, err
	}
	if err := refuseArchivedRun(r); err != nil {
		return nil, err
	}
	kinds, err := nodeKinds(ctx, rd, r.PublishedVersionID)
	if err != nil {
		return nil, err
	}
	facts := newStepFacts(kinds)
	if err := scanRecords(ctx, rd, r.ID, r.State.Seq, facts.event); err != nil {
		return nil, err
	}
	var items []PositionedStep
	for _, st := range facts.finish(&r.State) {
		if len(items) < q.Limit && (q.After == "" || st.pos.after(from)) {
			items = append(items, PositionedStep{Step: st.Step, Position: st.pos.String()})
		}
	}
	return items, nil
}

// LogQuery selects a page of a run's log lines (runs.logs).
type LogQuery struct {
	Scope auth.Scope
	RunID string
	// MinLevel is the lowest level shown (logLevels; "" is info).
	MinLevel string
	Types    []string
	// Since is inclusive, Until exclusive.
	Since, Until *time.Time
	// After is the id to resume behind.
	After int64
	Limit int
}

// RunLogs answers the log lines of run q.RunID that match q, in id order.
func (s *Service) RunLogs(ctx context.Context, q LogQuery) ([]LogEntry, error) {
	rd := s.db.Reader()
	if err := requireEnvironment(ctx, rd, q.Scope); err != nil {
		return nil, err
	}
	ok, err := runExists(ctx, rd, q.Scope, q.RunID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound("run")
	}
	if err := refuseArchived(ctx, rd, q.RunID); err != nil {
		return nil, err
	}
	return listLogLines(ctx, rd, q)
}

// stepFacts builds a run's step instances from its history records (fed
// in seq order) and its state.
type stepFacts struct {
	kinds map[string]string // node id to step kind
	steps []*stepFact
	byKey map[stepKey]*stepFact
}

type stepKey struct {
	node string
	gen  int
}

// stepFact is a Step with its position (started seq, index of the
// step_started record in its event) and where its last error came from.
type stepFact struct {
	Step
	pos      stepPos
	errSeq   int64
	timedOut bool
}

// stepPos orders steps: by the event that started them, then by the
// record's index in that event.
type stepPos struct{ seq, idx int64 }

func (p stepPos) String() string { return fmt.Sprintf("%d.%d", p.seq, p.idx) }

func parseStepPos(s string) (stepPos, bool) {
	a, b, ok := strings.Cut(s, ".")
	seq, err1 := strconv.ParseInt(a, 10, 64)
	idx, err2 := strconv.ParseInt(b, 10, 64)
	return stepPos{seq, idx}, ok && err1 == nil && err2 == nil
}

func (p stepPos) after(q stepPos) bool { return p.seq > q.seq || (p.seq == q.seq && p.idx > q.idx) }

func newStepFacts(kinds map[string]string) *stepFacts {
	return &stepFacts{kinds: kinds, byKey: map[stepKey]*stepFact{}}
}

// event adds the records of one accepted event; failure is the error of a
// task_failed event (nil otherwise) and failedTask its task.
func (f *stepFacts) event(records []kernel.Record, failedTask string, failure *kernel.TaskError) {
	for i := range records {
		r := &records[i]
		if r.Type == kernel.RecordStepStarted {
			st := &stepFact{Step: Step{NodeID: r.NodeID, Instance: r.Instance, Generation: r.Generation, Kind: f.kinds[r.NodeID],
				Status: "running", StartedAt: r.ObservedAt, StartedSeq: r.Seq}, pos: stepPos{r.Seq, int64(i)}}
			f.steps = append(f.steps, st)
			f.byKey[stepKey{r.NodeID, r.Generation}] = st
			continue
		}
		st := f.byKey[stepKey{r.NodeID, r.Generation}]
		if st == nil {
			continue
		}
		switch r.Type {
		case kernel.RecordStepCompleted:
			st.Status, st.EndedAt, st.EndedSeq = "completed", timePtr(r.ObservedAt), r.Seq
		case kernel.RecordTimedOut:
			st.timedOut = true
		case kernel.RecordTaskRetryScheduled:
			st.Attempts = max(st.Attempts, r.Attempt+1)
			if failure != nil && failedTask == r.TaskID {
				st.setError(failure, r.Seq)
			}
		}
	}
}

func (st *stepFact) setError(e *kernel.TaskError, seq int64) {
	if e != nil && seq >= st.errSeq {
		c := *e
		st.LastError, st.errSeq = &c, seq
	}
}

func timePtr(t time.Time) *time.Time { return &t }

// finish settles what the records leave open from the run's state: active
// steps, attempts, errors from incidents and tasks, and how the steps the
// end of the run interrupted ended. It answers the steps in start order.
func (f *stepFacts) finish(st *kernel.State) []*stepFact {
	for _, inc := range st.Incidents {
		if s := f.byKey[stepKey{inc.NodeID, inc.Generation}]; s != nil {
			s.Attempts = max(s.Attempts, inc.Attempt)
			s.setError(inc.Error, inc.OpenedSeq)
		}
	}
	for _, t := range st.Tasks {
		if s := f.byKey[stepKey{t.Node, t.Generation}]; s != nil {
			s.Attempts = max(s.Attempts, t.Attempt)
			s.setError(t.LastError, st.Seq)
		}
	}
	for _, tok := range st.Tokens {
		if tok.Phase == kernel.PhaseEnter {
			continue // moved on to a node it has not entered yet
		}
		s := f.byKey[stepKey{tok.Node, tok.Generation}]
		if s == nil || s.EndedAt != nil {
			continue
		}
		s.Status, s.WaitingFor, s.Deadline = activeStatus(st, tok), string(tok.Wait), tok.Deadline
		if t := st.Timers[tok.TimerID]; t != nil && s.Deadline == nil {
			s.Deadline = timePtr(t.Due)
		}
	}
	ended := st.Status.Terminal()
	blamed := false
	for i := len(f.steps) - 1; i >= 0; i-- {
		s := f.steps[i]
		if s.Kind == "action" || s.Kind == "agent" {
			s.Attempts = max(s.Attempts, 1)
		}
		if ended && s.EndedAt == nil {
			s.EndedAt, s.EndedSeq = timePtr(st.Now), st.Seq
			e := st.Error
			switch {
			case !blamed && e != nil && e.Node == s.NodeID && e.Instance == s.Instance:
				// The latest instance the run's error names ended the run.
				blamed = true
				s.Status = "failed"
				if st.Status == kernel.StatusTimedOut {
					s.Status = "timed_out"
				}
				if s.LastError == nil {
					s.LastError = &kernel.TaskError{Code: e.Code, Message: e.Message}
				}
			case s.timedOut:
				s.Status = "timed_out"
			case s.Kind == "succeed" && st.Status == kernel.StatusSucceeded:
				s.Status = "completed"
			default:
				s.Status = "cancelled"
			}
		}
	}
	return f.steps
}

// activeStatus is the status of the step instance of an active token.
func activeStatus(st *kernel.State, tok *kernel.Token) string {
	switch tok.Wait {
	case kernel.WaitTimer, kernel.WaitSignal, kernel.WaitHuman:
		return "waiting"
	case kernel.WaitIncident:
		return "suspended"
	case kernel.WaitTask:
		if t := st.Tasks[tok.TaskID]; t != nil {
			switch t.Status {
			case kernel.TaskBackoff:
				return "retrying"
			case kernel.TaskIncident:
				return "suspended"
			}
		}
	}
	return "running"
}
