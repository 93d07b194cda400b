package engine

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
)

// AdmissionPolicy is the admission policy of new runs.
const AdmissionPolicy = "classified-v1"

// StartRequest is the body of POST E/runs and POST E/runs/{run}/retry.
type StartRequest struct {
	ActivationID   string          `json:"activation_id" api:"required" format:"uuid" doc:"an active activation of the environment"`
	Input          json.RawMessage `json:"input,omitempty" doc:"the run input, a JSON object (at most 1 MiB); the activation's input defaults fill absent top-level properties"`
	CorrelationKey string          `json:"correlation_key,omitempty" doc:"at most 200 characters"`
	BusinessKey    string          `json:"business_key,omitempty" doc:"at most 200 characters"`
}

// CancelRequest is the body of POST E/runs/{run}/cancel.
type CancelRequest struct {
	Reason string `json:"reason" api:"required" doc:"non-blank, at most 2000 characters"`
}

// MaxCancelStateBytes bounds the state a cancellation answer carries: a
// larger run is acknowledged without its state (docs/platform-api.md, "Large-run
// cancellation acknowledgment"), so that cancelling never fails for size.
const MaxCancelStateBytes = 1 << 20

// CancelAck answers the cancellation of a run whose state is over
// MaxCancelStateBytes: the run's terminal status without /state.
type CancelAck struct {
	ID                         string     `json:"id" format:"uuid"`
	Status                     string     `json:"status"`
	AcceptedSequence           int64      `json:"accepted_sequence"`
	CapacityLimited            bool       `json:"capacity_limited" doc:"always true: the state was left out"`
	Omitted                    []Omission `json:"omitted" doc:"what was left out, and why"`
	ExternalEffectsMayContinue bool       `json:"external_effects_may_continue"`
}

// Omission names a part of an answer left out, and why.
type Omission struct {
	Path   string `json:"path" doc:"JSON pointer of the part left out"`
	Reason string `json:"reason" doc:"resource_limit"`
}

// cancelAnswer is the answer to a cancellation (Cancel's run, with
// ExternalEffectsMayContinue set): the run view, or a CancelAck when the
// view's state is over MaxCancelStateBytes.
func cancelAnswer(v Run) any {
	may := v.ExternalEffectsMayContinue != nil && *v.ExternalEffectsMayContinue
	if b, err := json.Marshal(v.State); err == nil && len(b) <= MaxCancelStateBytes {
		return v
	}
	return CancelAck{ID: v.ID, Status: v.Status, AcceptedSequence: v.AcceptedSequence, CapacityLimited: true,
		Omitted: []Omission{{Path: "/state", Reason: "resource_limit"}}, ExternalEffectsMayContinue: may}
}

// ActivationRef names a run's activation.
type ActivationRef struct {
	ID string `json:"id" format:"uuid"`
}

// TaskView is a task of a run that has not finished.
type TaskView struct {
	ID       string `json:"id" format:"uuid"`
	NodeID   string `json:"node_id"`
	Instance string `json:"instance"`
	Executor string `json:"executor"`
	Ref      string `json:"ref,omitempty"`
	Attempt  int    `json:"attempt"`
	Status   string `json:"status"`
}

// RunState is the visible part of a run's state; secret input and output
// values are redacted.
type RunState struct {
	Input     json.RawMessage            `json:"input"`
	Vars      map[string]json.RawMessage `json:"vars"`
	Output    json.RawMessage            `json:"output,omitempty"`
	Error     *kernel.RunError           `json:"error,omitempty"`
	Tasks     []TaskView                 `json:"tasks"`
	StartedAt time.Time                  `json:"started_at"`
	Deadline  *time.Time                 `json:"deadline,omitempty"`
}

// Run is a run.
type Run struct {
	ID               string        `json:"id" format:"uuid"`
	Activation       ActivationRef `json:"activation"`
	EnvironmentID    string        `json:"environment_id" format:"uuid"`
	Status           string        `json:"status" doc:"running, waiting, suspended, succeeded, failed, cancelled or timed_out"`
	Paused           bool          `json:"paused" doc:"the run is paused (POST .../pause): it does not advance until resumed"`
	Test             bool          `json:"test" doc:"a test run (step tests, draft test activations): left out of run lists unless include_test=true"`
	Archived         bool          `json:"archived,omitempty" doc:"the run is archived (POST .../archive): its history, steps, logs and replay answer 409 until it is restored; absent when it is not"`
	State            RunState      `json:"state"`
	AdmissionPolicy  string        `json:"admission_policy"`
	ParentRunID      *string       `json:"parent_run_id" format:"uuid"`
	CorrelationKey   *string       `json:"correlation_key"`
	BusinessKey      *string       `json:"business_key"`
	AcceptedSequence int64         `json:"accepted_sequence" doc:"sequence number of the last accepted event"`
	// ExternalEffectsMayContinue is set on cancellation responses.
	ExternalEffectsMayContinue *bool     `json:"external_effects_may_continue,omitempty"`
	CreatedAt                  time.Time `json:"created_at"`
	UpdatedAt                  time.Time `json:"updated_at"`
	CreatedBy                  string    `json:"created_by" format:"uuid"`
}

// HistoryEvent is one accepted event of a run.
type HistoryEvent struct {
	Seq     int64           `json:"seq"`
	Kind    string          `json:"kind"`
	At      time.Time       `json:"at"`
	Event   json.RawMessage `json:"event" doc:"the accepted kernel event"`
	Records json.RawMessage `json:"records" doc:"history facts of the event (step_started, wait_elapsed, ...)"`
}

// view builds the Run view of r with p's secret pointers redacted.
func view(r runRow, p *program) Run {
	st := r.State
	rs := RunState{Input: redact(st.Input, p.sec.Input), Vars: p.sec.vars(st.Vars), Output: redact(st.Output, p.sec.Output), Error: st.Error,
		Tasks: []TaskView{}, StartedAt: st.StartedAt, Deadline: st.Deadline}
	if rs.Input == nil {
		rs.Input = json.RawMessage("{}")
	}
	for _, t := range st.Tasks {
		rs.Tasks = append(rs.Tasks, TaskView{ID: t.ID, NodeID: t.Node, Instance: t.Instance, Executor: t.Executor, Ref: t.Ref,
			Attempt: t.Attempt, Status: string(t.Status)})
	}
	sort.Slice(rs.Tasks, func(i, j int) bool { return rs.Tasks[i].ID < rs.Tasks[j].ID })
	return Run{ID: r.ID, Activation: ActivationRef{ID: r.ActivationID}, EnvironmentID: r.Environment, Status: string(st.Status),
		Paused: r.Paused && !st.Status.Terminal(), Test: r.Test, Archived: r.Archived, State: rs, AdmissionPolicy: AdmissionPolicy, ParentRunID: r.ParentRunID, CorrelationKey: r.CorrelationKey,
		BusinessKey: r.BusinessKey, AcceptedSequence: st.Seq, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, CreatedBy: r.CreatedBy}
}
