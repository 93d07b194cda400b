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
	"net/http"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// tagIncidents is the OpenAPI tag of the incident routes.
const tagIncidents = "Incidents"

// incidentsBase is E/incidents relative to api.Prefix.
const incidentsBase = "/tenants/{tenant}/projects/{project}/environments/{environment}/incidents"

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

// registerIncidents adds the incident routes to a.
func (s *Service) registerIncidents(add func(api.Route)) {
	for _, rt := range []api.Route{
		{Method: "GET", Path: base + "/{run}/incidents", Capability: auth.CapIncidentRead, Handler: s.runIncidents,
			OperationID: "listRunIncidents", Tag: tagIncidents, Summary: "List a run's incidents",
			Description: "Active and resolved incidents of the run, in the order they opened.",
			Response:    []Incident{}},
		{Method: "GET", Path: incidentsBase, Capability: auth.CapIncidentRead, Page: true, Handler: s.listIncidents,
			OperationID: "listIncidents", Tag: tagIncidents, Summary: "List the incidents of the environment",
			Description: "Active and resolved incidents of every run of the environment, in incident id order.",
			Query:       []api.Param{{Name: "status", Type: "string", Description: "active or resolved (default: both)"}},
			Response:    api.Page[Incident]{}},
		{Method: "POST", Path: incidentsBase + "/{incident}/resolve", Capability: auth.CapIncidentResolve, IfMatch: api.PolicyRequired,
			Handler: s.resolve, OperationID: "resolveIncident", Tag: tagIncidents, Summary: "Resolve an incident",
			Description: "Resolves an active incident at the If-Match revision (409 PF-INCIDENT-REVISION when stale) following the " +
				"Incident state table: retry_safe, accept_reconciled_result (output and evidence_reference) or terminate (the run is " +
				"cancelled). The same receipt_id with the same body and revision by the same principal answers the committed result; " +
				"otherwise a reused receipt_id answers 409 PF-INCIDENT-RECEIPT-CONFLICT.",
			Request: ResolveRequest{}, Response: Resolved{}, ETag: true, MaxBody: payloadBodyBytes},
	} {
		add(rt)
	}
}

// incidentView builds the view of an incident of run.
func incidentView(run string, inc *kernel.Incident) Incident {
	return Incident{ID: inc.ID, RunID: run, Revision: inc.Revision, NodeID: inc.NodeID, Instance: inc.Instance,
		Generation: inc.Generation, Code: inc.Code, Status: string(inc.Status), TaskID: inc.TaskID, ChildID: inc.ChildID,
		SideEffect: inc.SideEffect, RetrySafe: inc.Retryable(), Attempt: inc.Attempt, Error: inc.Error, OpenedAt: inc.OpenedAt,
		Deadline: inc.Deadline, Resolution: inc.Resolution}
}

// indexIncidents records in tx the incidents that the effects of a step
// opened or closed.
func indexIncidents(ctx context.Context, tx *sql.Tx, run, env string, effects []kernel.Effect) error {
	for _, ef := range effects {
		if (ef.Kind != kernel.EffectOpenIncident && ef.Kind != kernel.EffectResolveIncident) || ef.Incident == nil {
			continue
		}
		inc := ef.Incident
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_run_incidents(incident_id, run_id, environment_id, status, opened_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT(incident_id) DO UPDATE SET status = excluded.status, opened_at = excluded.opened_at`,
			inc.ID, run, env, string(inc.Status), store.Millis(inc.OpenedAt)); err != nil {
			return fmt.Errorf("engine: index incident: %w", err)
		}
	}
	return nil
}

// runIncidents serves GET E/runs/{run}/incidents.
func (s *Service) runIncidents(c *api.Call) error {
	r, _, err := s.read(c, s.db.Reader())
	if err != nil {
		return err
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
	return c.OK(out)
}

// listIncidents serves GET E/incidents: a page of the index, each incident
// read from its run's state.
func (s *Service) listIncidents(c *api.Call) error {
	status, err := c.Query("status")
	if err != nil {
		return err
	}
	if status != "" && status != string(kernel.IncidentActive) && status != string(kernel.IncidentResolved) {
		return api.InvalidParameter(api.CodeValidation, "status", "status is active or resolved")
	}
	q, err := c.PageQuery("incidents", map[string]string{"status": status})
	if err != nil {
		return err
	}
	ctx, rd, sc := c.Context(), s.db.Reader(), c.PathScope()
	if err := requireEnvironment(ctx, rd, sc); err != nil {
		return err
	}
	rows, err := rd.QueryContext(ctx, `SELECT incident_id, run_id, status, opened_at FROM platform_run_incidents
		WHERE environment_id = ? AND incident_id > ? AND (? = '' OR status = ?) ORDER BY incident_id LIMIT ?`,
		sc.Environment, q.After, status, status, q.Fetch())
	if err != nil {
		return fmt.Errorf("engine: list incidents: %w", err)
	}
	type ref struct {
		incident, run, status string
		opened                int64
	}
	var refs []ref
	for rows.Next() {
		var x ref
		if err := rows.Scan(&x.incident, &x.run, &x.status, &x.opened); err != nil {
			rows.Close()
			return fmt.Errorf("engine: list incidents: %w", err)
		}
		refs = append(refs, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("engine: list incidents: %w", err)
	}
	runs := map[string]runRow{}
	items := make([]Incident, 0, len(refs))
	for _, x := range refs {
		r, ok := runs[x.run]
		if !ok {
			if r, err = s.getRun(ctx, rd, sc.Environment, x.run); err != nil && !errors.Is(err, errLegacy) {
				return err
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
	page, err := api.MakePage(q, items, func(i Incident) string { return i.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// checkResolve validates a resolution request and answers its output (nil
// when absent).
func checkResolve(req *ResolveRequest) (json.RawMessage, error) {
	if !auth.IsCanonicalUUID(req.ReceiptID) {
		return nil, api.Invalid("/receipt_id", "receipt_id must be a canonical lowercase UUID")
	}
	kind := kernel.ResolutionKind(req.Kind)
	if kind != kernel.ResolveRetrySafe && kind != kernel.ResolveAccept && kind != kernel.ResolveTerminate {
		return nil, api.Invalid("/kind", "kind is retry_safe, accept_reconciled_result or terminate")
	}
	if err := checkText("reason", req.Reason, MaxReasonLen, true); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(req.EvidenceReference) > MaxReasonLen {
		return nil, api.Invalid("/evidence_reference", "evidence_reference has at most %d characters", MaxReasonLen)
	}
	if req.EvidenceReference != "" && kind != kernel.ResolveAccept {
		return nil, api.Invalid("/evidence_reference", "evidence_reference is only sent with accept_reconciled_result")
	}
	out := bytes.TrimSpace(req.Output)
	if len(out) == 0 || string(out) == "null" {
		return nil, nil
	}
	if kind != kernel.ResolveAccept {
		return nil, &api.Error{Status: http.StatusUnprocessableEntity, Code: kernel.CodeRuntimeOutput,
			Message: string(kind) + " takes no output; output is only sent with accept_reconciled_result"}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out); err != nil {
		return nil, api.Invalid("/output", "output is not valid JSON")
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

// resolve serves POST E/incidents/{incident}/resolve.
func (s *Service) resolve(c *api.Call) error {
	id, err := c.UUIDParam("incident", "incident")
	if err != nil {
		return err
	}
	var req ResolveRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	output, err := checkResolve(&req)
	if err != nil {
		return err
	}
	rev := c.IfMatch()
	hash, err := receiptHash(id, rev, &req, output)
	if err != nil {
		return err
	}
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := requireEnvironment(ctx, tx, sc); err != nil {
			return nil, err
		}
		var runID string
		err := tx.QueryRowContext(ctx, `SELECT run_id FROM platform_run_incidents WHERE incident_id = ? AND environment_id = ?`,
			id, sc.Environment).Scan(&runID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, api.NotFound("incident")
		} else if err != nil {
			return nil, fmt.Errorf("engine: find incident: %w", err)
		}
		if res, err := replayReceipt(ctx, tx, req.ReceiptID, by, hash); res != nil || err != nil {
			return res, err
		}
		r, err := s.getRun(ctx, tx, sc.Environment, runID)
		if err != nil {
			return nil, err
		}
		p, err := s.program(ctx, tx, r.Project, r.PublishedVersionID)
		if err != nil {
			return nil, err
		}
		if rev > math.MaxInt32 {
			return nil, api.Conflict(kernel.CodeIncidentRevision, "incident %s is not at revision %d", id, rev)
		}
		e := kernel.Event{Kind: kernel.EventIncidentResolved, IncidentID: id, Revision: int(rev),
			Resolution: kernel.ResolutionKind(req.Kind), Reason: req.Reason, Output: output,
			EvidenceReference: req.EvidenceReference, ReceiptID: req.ReceiptID}
		if _, err := s.apply(ctx, tx, &r, p, e); err != nil {
			return nil, resolveRefusal(err)
		}
		inc := r.State.Incidents[id]
		if inc == nil {
			return nil, fmt.Errorf("engine: incident %s left run %s", id, r.ID)
		}
		v := view(r, p)
		may := r.State.ExternalEffectsMayContinue
		v.ExternalEffectsMayContinue = &may
		out := Resolved{Incident: incidentView(r.ID, inc), Run: v}
		body, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("engine: encode resolution: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_incident_receipts(receipt_id, incident_id, principal_id, request_hash,
			revision, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`, req.ReceiptID, id, by, hash, inc.Revision, string(body),
			store.Millis(s.timestamp())); err != nil {
			return nil, fmt.Errorf("engine: store receipt: %w", err)
		}
		return &api.Result{Body: json.RawMessage(body), Revision: int64(inc.Revision)}, nil
	}, s.notify)
}

// replayReceipt answers the committed result of a receipt sent again with
// the same request by the same principal, a conflict for any other reuse,
// and nil for a new receipt.
func replayReceipt(ctx context.Context, tx *sql.Tx, receipt, principal string, hash []byte) (*api.Result, error) {
	var by, body string
	var stored []byte
	var rev int64
	err := tx.QueryRowContext(ctx, `SELECT principal_id, request_hash, revision, body FROM platform_incident_receipts WHERE receipt_id = ?`,
		receipt).Scan(&by, &stored, &rev, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read receipt: %w", err)
	}
	if by != principal || !bytes.Equal(stored, hash) {
		return nil, api.Conflict(CodeReceiptConflict, "receipt_id %s was already used for another decision; send a new receipt_id", receipt)
	}
	return &api.Result{Body: json.RawMessage(body), Revision: rev}, nil
}

// resolveRefusal maps a kernel refusal of a resolution: body errors
// (PF-VALIDATION, PF-RUNTIME-OUTPUT) are 422, state errors 409.
func resolveRefusal(err error) error {
	var ke *kernel.Error
	if errors.As(err, &ke) && ke.Code == kernel.CodeRuntimeOutput {
		return &api.Error{Status: http.StatusUnprocessableEntity, Code: ke.Code, Message: ke.Msg}
	}
	return refusal(err)
}
