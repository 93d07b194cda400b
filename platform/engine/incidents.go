package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// CodeReceiptConflict: a receipt id reused with another body or revision,
// or by another principal.
const CodeReceiptConflict = "PF-INCIDENT-RECEIPT-CONFLICT"

// Incident is an incident of a run (active or resolved).
type Incident struct {
	ID         string             `json:"id" format:"uuid"`
	RunID      string             `json:"run_id" format:"uuid"`
	Revision   int                `json:"revision" doc:"the If-Match revision of a resolution"`
	NodeID     string             `json:"node_id"`
	Instance   string             `json:"instance"`
	Generation int                `json:"generation"`
	Code       string             `json:"code" doc:"PF-TASK-RETRIES-EXHAUSTED, PF-TASK-AMBIGUOUS, PF-TASK-DEADLINE or PF-TASK-FAILED"`
	Status     string             `json:"status" doc:"active or resolved"`
	TaskID     string             `json:"task_id,omitempty"`
	ChildID    string             `json:"child_id,omitempty"`
	SideEffect string             `json:"side_effect,omitempty"`
	RetrySafe  bool               `json:"retry_safe" doc:"whether retry_safe may be chosen"`
	Attempt    int                `json:"attempt,omitempty"`
	Error      *kernel.TaskError  `json:"error,omitempty"`
	OpenedAt   time.Time          `json:"opened_at"`
	Deadline   *time.Time         `json:"deadline,omitempty"`
	Resolution *kernel.Resolution `json:"resolution,omitempty" doc:"set once resolved; kind run_ended when the run ended while it was active"`
	// Unavailable marks the safe placeholder of an incident whose run's
	// state cannot be shown (PF-LEGACY-UNAVAILABLE).
	Unavailable bool `json:"unavailable,omitempty" doc:"true on the placeholder of an incident whose run's state cannot be shown: only id, run_id, status and opened_at are known"`
}

// ResolveRequest is the body of POST E/incidents/{incident}/resolve.
type ResolveRequest struct {
	ReceiptID         string          `json:"receipt_id" api:"required" format:"uuid" doc:"new per decision; a replay with the same body answers the committed result"`
	Kind              string          `json:"kind" api:"required" doc:"retry_safe, accept_reconciled_result or terminate"`
	Reason            string          `json:"reason" api:"required" doc:"non-blank, at most 2000 characters"`
	Output            json.RawMessage `json:"output,omitempty" doc:"accept_reconciled_result only: the step output, valid for the pinned output schema"`
	EvidenceReference string          `json:"evidence_reference,omitempty" doc:"required for accept_reconciled_result, at most 2000 characters"`
}

// Resolved is the answer of a resolution: the resolved incident and its run.
type Resolved struct {
	Incident Incident `json:"incident"`
	Run      Run      `json:"run" doc:"with external_effects_may_continue"`
}

// incidentView builds the view of an incident of run.
func incidentView(run string, inc *kernel.Incident) Incident {
	return Incident{ID: inc.ID, RunID: run, Revision: inc.Revision, NodeID: inc.NodeID, Instance: inc.Instance,
		Generation: inc.Generation, Code: inc.Code, Status: string(inc.Status), TaskID: inc.TaskID, ChildID: inc.ChildID,
		SideEffect: inc.SideEffect, RetrySafe: inc.Retryable(), Attempt: inc.Attempt, Error: inc.Error, OpenedAt: inc.OpenedAt,
		Deadline: inc.Deadline, Resolution: inc.Resolution}
}

// RunIncidents answers the incidents of run id of environment sc, active
// and resolved, in the order they opened.
func (s *Service) RunIncidents(ctx context.Context, sc auth.Scope, id string) ([]Incident, error) {
	r, _, err := s.readRun(ctx, s.db.Reader(), sc, id)
	if err != nil {
		return nil, err
	}
	incs := make([]*kernel.Incident, 0, len(r.State.Incidents))
	for _, inc := range r.State.Incidents {
		incs = append(incs, inc)
	}
	sort.Slice(incs, func(i, j int) bool {
		if incs[i].OpenedSeq != incs[j].OpenedSeq {
			return incs[i].OpenedSeq < incs[j].OpenedSeq
		}
		return incs[i].ID < incs[j].ID
	})
	out := make([]Incident, len(incs))
	for i, inc := range incs {
		out[i] = incidentView(r.ID, inc)
	}
	return out, nil
}

// IncidentFilter selects the incidents ListIncidents answers.
type IncidentFilter struct {
	Scope auth.Scope
	// Status is active or resolved ("" both).
	Status string
	// After is the incident id to resume behind.
	After string
	Limit int
}

// ListIncidents answers a page of the incident index of f.Scope's
// environment in incident id order, each incident read from its run's
// state.
func (s *Service) ListIncidents(ctx context.Context, f IncidentFilter) ([]Incident, error) {
	rd := s.db.Reader()
	if err := requireEnvironment(ctx, rd, f.Scope); err != nil {
		return nil, err
	}
	refs, err := listIncidentRefs(ctx, rd, f)
	if err != nil {
		return nil, err
	}
	runs := map[string]runRow{}
	items := make([]Incident, 0, len(refs))
	for _, x := range refs {
		r, ok := runs[x.run]
		if !ok {
			if r, err = s.getRun(ctx, rd, f.Scope.Environment, x.run); err != nil && !errors.Is(err, errLegacy) {
				return nil, err
			}
			runs[x.run] = r
		}
		inc := r.State.Incidents[x.incident]
		if r.Legacy || inc == nil {
			// The run's state cannot be shown, or was replaced when such a
			// run was cancelled: a placeholder from the index.
			items = append(items, Incident{ID: x.incident, RunID: x.run, Status: x.status, OpenedAt: store.FromMillis(x.opened), Unavailable: true})
			continue
		}
		items = append(items, incidentView(r.ID, inc))
	}
	return items, nil
}

// checkResolve validates a resolution request and answers its output (nil
// when absent).
func checkResolve(req *ResolveRequest) (json.RawMessage, error) {
	if !auth.IsCanonicalUUID(req.ReceiptID) {
		return nil, invalid("/receipt_id", "receipt_id must be a canonical lowercase UUID")
	}
	kind := kernel.ResolutionKind(req.Kind)
	if kind != kernel.ResolveRetrySafe && kind != kernel.ResolveAccept && kind != kernel.ResolveTerminate {
		return nil, invalid("/kind", "kind is retry_safe, accept_reconciled_result or terminate")
	}
	if err := checkText("reason", req.Reason, MaxReasonLen, true); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(req.EvidenceReference) > MaxReasonLen {
		return nil, invalid("/evidence_reference", "evidence_reference has at most %d characters", MaxReasonLen)
	}
	if req.EvidenceReference != "" && kind != kernel.ResolveAccept {
		return nil, invalid("/evidence_reference", "evidence_reference is only sent with accept_reconciled_result")
	}
	out := bytes.TrimSpace(req.Output)
	if len(out) == 0 || string(out) == "null" {
		return nil, nil
	}
	if kind != kernel.ResolveAccept {
		return nil, refused(kernel.CodeRuntimeOutput, "%s takes no output; output is only sent with accept_reconciled_result", kind)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out); err != nil {
		return nil, invalid("/output", "output is not valid JSON")
	}
	return compact.Bytes(), nil
}

// receiptHash identifies a resolution request: incident, revision and the
// normalized body.
func receiptHash(incident string, rev int64, req *ResolveRequest, output json.RawMessage) ([]byte, error) {
	data, err := json.Marshal(struct {
		Incident string          `json:"incident"`
		Revision int64           `json:"revision"`
		Kind     string          `json:"kind"`
		Reason   string          `json:"reason"`
		Output   json.RawMessage `json:"output,omitempty"`
		Evidence string          `json:"evidence_reference,omitempty"`
	}{incident, rev, req.Kind, req.Reason, output, req.EvidenceReference})
	if err != nil {
		return nil, fmt.Errorf("engine: encode receipt: %w", err)
	}
	sum := sha256.Sum256(data)
	return sum[:], nil
}

// ResolveIncident resolves active incident id of environment sc at
// revision rev (the If-Match revision) as principal by, following the
// Incident state table (docs/platform-api.md, "Incidents"); see within for
// tx. The same receipt with the same request by the same principal answers
// the committed result; another reuse is PF-INCIDENT-RECEIPT-CONFLICT, a
// stale revision PF-INCIDENT-REVISION.
func (s *Service) ResolveIncident(ctx context.Context, tx *sql.Tx, sc auth.Scope, by, id string, rev int64, req ResolveRequest) (Resolved, error) {
	if !auth.IsCanonicalUUID(id) {
		return Resolved{}, notFound("incident")
	}
	output, err := checkResolve(&req)
	if err != nil {
		return Resolved{}, err
	}
	hash, err := receiptHash(id, rev, &req, output)
	if err != nil {
		return Resolved{}, err
	}
	var out Resolved
	err = s.within(ctx, tx, func(tx *sql.Tx) error {
		if err := requireEnvironment(ctx, tx, sc); err != nil {
			return err
		}
		runID, err := incidentRun(ctx, tx, sc.Environment, id)
		if err != nil {
			return err
		}
		if stored, found, err := receiptOf(ctx, tx, req.ReceiptID); err != nil {
			return err
		} else if found {
			if stored.principal != by || !bytes.Equal(stored.hash, hash) {
				return refused(CodeReceiptConflict, "receipt_id %s was already used for another decision; send a new receipt_id", req.ReceiptID)
			}
			// The committed answer; the incident's revision in it is
			// the stored one.
			if err := json.Unmarshal([]byte(stored.body), &out); err != nil {
				return fmt.Errorf("engine: stored receipt %s: %w", req.ReceiptID, err)
			}
			return nil
		}
		r, err := s.getRun(ctx, tx, sc.Environment, runID)
		if err != nil {
			return err
		}
		p, err := s.program(ctx, tx, r.Project, r.PublishedVersionID)
		if err != nil {
			return err
		}
		if rev > math.MaxInt32 {
			return refused(kernel.CodeIncidentRevision, "incident %s is not at revision %d", id, rev)
		}
		e := kernel.Event{Kind: kernel.EventIncidentResolved, IncidentID: id, Revision: int(rev),
			Resolution: kernel.ResolutionKind(req.Kind), Reason: req.Reason, Output: output,
			EvidenceReference: req.EvidenceReference, ReceiptID: req.ReceiptID}
		if _, err := s.apply(ctx, tx, &r, p, e); err != nil {
			return refusal(err)
		}
		inc := r.State.Incidents[id]
		if inc == nil {
			return fmt.Errorf("engine: incident %s left run %s", id, r.ID)
		}
		v := view(r, p)
		may := r.State.ExternalEffectsMayContinue
		v.ExternalEffectsMayContinue = &may
		out = Resolved{Incident: incidentView(r.ID, inc), Run: v}
		body, err := json.Marshal(out)
		if err != nil {
			return fmt.Errorf("engine: encode resolution: %w", err)
		}
		return storeReceipt(ctx, tx, req.ReceiptID, id, by, hash, inc.Revision, body, s.timestamp())
	})
	return out, err
}
