package kernel

import (
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/lang"
)

// Incident codes.
const (
	IncidentRetriesExhausted = "PF-TASK-RETRIES-EXHAUSTED"
	IncidentTaskAmbiguous    = "PF-TASK-AMBIGUOUS"
	IncidentTaskDeadline     = "PF-TASK-DEADLINE"
	IncidentTaskFailed       = "PF-TASK-FAILED"
)

// IncidentStatus is active or resolved.
type IncidentStatus string

const (
	IncidentActive   IncidentStatus = "active"
	IncidentResolved IncidentStatus = "resolved"
)

// Incident suspends a run until an operator resolves it. Every active
// incident of a run holds the same run-wide barrier: nothing continues
// until the last one is resolved.
type Incident struct {
	ID         string         `json:"id"`
	Revision   int            `json:"revision"`
	NodeID     string         `json:"node_id"`
	Instance   string         `json:"instance"`
	Generation int            `json:"generation"`
	Code       string         `json:"code"`
	Status     IncidentStatus `json:"status"`
	// TaskID is the attempt the incident is about (actions, agents);
	// ChildID the child run (workflow steps).
	TaskID  string `json:"task_id,omitempty"`
	ChildID string `json:"child_id,omitempty"`
	// SideEffect is the action's class; RetrySafe says whether retry_safe
	// may be chosen (an action of a class safe to repeat).
	SideEffect string     `json:"side_effect,omitempty"`
	RetrySafe  bool       `json:"retry_safe"`
	Attempt    int        `json:"attempt,omitempty"`
	Error      *TaskError `json:"error,omitempty"`
	OpenedAt   time.Time  `json:"opened_at"`
	OpenedSeq  int64      `json:"opened_seq"`
	// Deadline is the action's original deadline, if it has one.
	Deadline   *time.Time  `json:"deadline,omitempty"`
	Resolution *Resolution `json:"resolution,omitempty"`
}

// Resolution is how an incident was resolved. Kind "run_ended" means the
// run ended (timed out, cancelled, terminated through another incident)
// while the incident was active.
type Resolution struct {
	Kind              ResolutionKind `json:"kind"`
	Reason            string         `json:"reason,omitempty"`
	EvidenceReference string         `json:"evidence_reference,omitempty"`
	ReceiptID         string         `json:"receipt_id,omitempty"`
	ResolvedAt        time.Time      `json:"resolved_at"`
	Seq               int64          `json:"seq"`
}

// Retryable says whether retry_safe may resolve the incident: an action of
// a class safe to repeat, whose outcome is known. An ambiguous outcome
// (PF-TASK-AMBIGUOUS) allows only accept_reconciled_result or terminate,
// whatever the class (docs/platform-api.md, "Incident").
func (inc *Incident) Retryable() bool {
	return inc.RetrySafe && inc.Code != IncidentTaskAmbiguous
}

func (inc *Incident) clone() *Incident {
	c := *inc
	if inc.Error != nil {
		e := *inc.Error
		c.Error = &e
	}
	if inc.Resolution != nil {
		r := *inc.Resolution
		c.Resolution = &r
	}
	return &c
}

// openIncident suspends the run on a task or a child run.
func (m *machine) openIncident(task *Task, child *Child, code string) {
	inc := &Incident{Revision: 1, Code: code, Status: IncidentActive, OpenedAt: m.now, OpenedSeq: m.ev.Seq}
	var tokID string
	switch {
	case task != nil:
		n := m.p.node(task.Node)
		inc.NodeID, inc.Instance, inc.Generation = task.Node, task.Instance, task.Generation
		inc.TaskID, inc.Attempt, inc.SideEffect = task.ID, task.Attempt, task.SideEffect
		inc.RetrySafe = n.kind == string(lang.StepAction) && task.SideEffect != lang.SideEffectUnsafe
		if task.LastError != nil {
			e := *task.LastError
			inc.Error = &e
		}
		if task.Deadline != nil {
			inc.Deadline = timePtr(*task.Deadline)
		}
		m.cancelTaskTimers(task)
		task.Status = TaskIncident
		tokID = task.Token
	case child != nil:
		inc.NodeID, inc.Instance, inc.Generation = child.Node, child.Instance, child.Generation
		inc.ChildID = child.ID
		inc.Error = &TaskError{Code: "DEADLINE_EXCEEDED", Message: "the child run did not finish in time"}
		if child.Deadline != nil {
			inc.Deadline = timePtr(*child.Deadline)
		}
		tokID = child.Token
	}
	inc.ID = incidentID(m.st.RunID, inc.NodeID, inc.Generation, inc.Attempt, code)
	if tok := m.st.Tokens[tokID]; tok != nil {
		tok.Phase, tok.Wait = PhaseWait, WaitIncident
	}
	m.st.Incidents[inc.ID] = inc
	m.emit(Effect{Kind: EffectOpenIncident, Incident: inc.clone()})
}

func (m *machine) closeIncident(inc *Incident, r *Resolution) {
	r.ResolvedAt = m.now
	r.Seq = m.ev.Seq
	inc.Status = IncidentResolved
	inc.Revision++
	inc.Resolution = r
	m.emit(Effect{Kind: EffectResolveIncident, Incident: inc.clone()})
}

// onIncidentResolved applies an operator's resolution, following the
// Incident state table of the specification.
func (m *machine) onIncidentResolved() error {
	e := m.ev
	if e.ReceiptID == "" || len(e.ReceiptID) > maxIDBytes {
		return refuse(CodeValidation, "a receipt id of 1 to %d bytes is required", maxIDBytes)
	}
	if err := checkReason(e.Reason); err != nil {
		return err
	}
	inc := m.st.Incidents[e.IncidentID]
	if inc == nil {
		return refuse(CodeRuntimeState, "incident %s does not belong to this run", e.IncidentID)
	}
	if e.Revision != inc.Revision {
		return refuse(CodeIncidentRevision, "incident %s is at revision %d, not %d", inc.ID, inc.Revision, e.Revision)
	}
	if inc.Status != IncidentActive {
		return refuse(CodeRuntimeState, "incident %s is no longer active", inc.ID)
	}
	res := &Resolution{Kind: e.Resolution, Reason: e.Reason, ReceiptID: e.ReceiptID}
	switch e.Resolution {
	case ResolveRetrySafe:
		return m.retrySafe(inc, res)
	case ResolveAccept:
		return m.acceptReconciled(inc, res)
	case ResolveTerminate:
		if e.Output != nil {
			return refuse(CodeRuntimeOutput, "terminate takes no output")
		}
		m.closeIncident(inc, res)
		m.endRun(StatusCancelled, nil, nil, true, "terminated")
		return nil
	}
	return refuse(CodeValidation, "unknown resolution %q", e.Resolution)
}

// retrySafe allows one attempt beyond the exhausted budget, with the
// original operation key, before the original deadlines; it neither resets
// the budget nor extends a deadline.
func (m *machine) retrySafe(inc *Incident, res *Resolution) error {
	if m.ev.Output != nil {
		return refuse(CodeRuntimeOutput, "retry_safe takes no output")
	}
	if inc.TaskID == "" || m.p.node(inc.NodeID).kind != string(lang.StepAction) {
		return refuse(CodeReconciliationRequired, "incident %s is not tied to an action: reconcile and accept a result, or terminate", inc.ID)
	}
	if inc.Code == IncidentTaskAmbiguous {
		return refuse(CodeReconciliationRequired, "the outcome of the %s action's attempt is unknown (%s): reconcile and accept a result, or terminate", inc.SideEffect, inc.Code)
	}
	if !inc.Retryable() {
		return refuse(CodeReconciliationRequired, "the action's side effect is %s: repeating it is not safe; reconcile and accept a result, or terminate", inc.SideEffect)
	}
	task := m.st.Tasks[inc.TaskID]
	if task == nil || task.Status != TaskIncident {
		return refuse(CodeRuntimeState, "no failed task matches incident %s", inc.ID)
	}
	if task.Deadline != nil && !m.now.Before(*task.Deadline) {
		return refuse(CodeRuntimeDeadline, "the action's deadline passed at %s", task.Deadline.Format(time.RFC3339Nano))
	}
	if m.st.Deadline != nil && !m.now.Before(*m.st.Deadline) {
		return refuse(CodeRuntimeDeadline, "the run's deadline passed at %s", m.st.Deadline.Format(time.RFC3339Nano))
	}
	m.closeIncident(inc, res)
	tok := m.st.Tokens[task.Token]
	if tok == nil {
		return refuse(CodeRuntimeState, "no step waits for incident %s", inc.ID)
	}
	task.Status = TaskBackoff // to be re-issued when the barrier clears
	tok.Wait, tok.Phase = WaitTask, PhaseIssue
	m.push(tok)
	if task.Deadline != nil {
		// Re-armed now, with the original due time, so that the deadline
		// holds even while other incidents keep the run suspended.
		m.startTimer(&Timer{ID: timerID(m.st.RunID, TimerStepDeadline, task.Node, task.Generation, 0), Kind: TimerStepDeadline,
			Due: *task.Deadline, NodeID: task.Node, Instance: task.Instance, Token: tok.ID})
	}
	return nil
}

// acceptReconciled completes the step with an output the operator
// established outside; it is validated against the pinned output schema,
// and no external lookup is made.
func (m *machine) acceptReconciled(inc *Incident, res *Resolution) error {
	e := m.ev
	if e.Output == nil || strings.TrimSpace(e.EvidenceReference) == "" {
		return refuse(CodeReconciliationRequired, "a reconciled result needs output and a non-blank evidence_reference")
	}
	if len(e.Output) > MaxValueBytes {
		return refuse(CodeRuntimeOutput, "the output is over the %d byte payload limit", MaxValueBytes)
	}
	n := m.p.node(inc.NodeID)
	raw, err := m.externalOutput(e.Output, n.output, CodeRuntimeOutput)
	if err != nil {
		return err
	}
	var tokID string
	switch {
	case inc.TaskID != "":
		task := m.st.Tasks[inc.TaskID]
		if task == nil || task.Status != TaskIncident {
			return refuse(CodeRuntimeState, "no failed task matches incident %s", inc.ID)
		}
		tokID = task.Token
		m.closeTask(task)
	case inc.ChildID != "":
		c := m.st.Children[inc.ChildID]
		if c == nil {
			return refuse(CodeRuntimeState, "no child run matches incident %s", inc.ID)
		}
		tokID = c.Token
		delete(m.st.Children, c.ID)
	}
	res.EvidenceReference = e.EvidenceReference
	m.closeIncident(inc, res)
	if tok := m.st.Tokens[tokID]; tok != nil {
		m.deliver(tok, raw, n.next)
	}
	return nil
}
