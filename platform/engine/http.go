package engine

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// Request limits.
const (
	MaxKeyLen     = 200
	MaxReasonLen  = 2000
	MaxInputBytes = 1 << 20
	// payloadBodyBytes bounds the bodies that carry a payload of up to 1
	// MiB (input, signal payload, output, form data): the payload plus room
	// for the other fields, so that an oversized payload is answered by the
	// route's own 422 rather than the generic 413.
	payloadBodyBytes = MaxInputBytes + 64<<10
)

// tagRuns is the OpenAPI tag of the routes.
const tagRuns = "Runs"

// base is E/runs relative to api.Prefix.
const base = "/tenants/{tenant}/projects/{project}/environments/{environment}/runs"

// Register adds the run and incident routes to a.
func (s *Service) Register(a *api.API, r *httprouter.Router) {
	routes := []api.Route{
		{Method: "POST", Path: base, Capability: auth.CapRunStart, Idempotency: api.PolicyRequired, Handler: s.start,
			OperationID: "startRun", Tag: tagRuns, Summary: "Start a run of an activation",
			Description: "Starts a run of an active activation of the environment with the input (validated against the workflow's input schema: 422 PF-VALIDATION). " +
				"An unknown activation answers 422 PF-VALIDATION, a retired one 409 PF-CONFLICT. Built-in echo and noop tasks complete in process; " +
				"wait steps complete through the scheduler.",
			Request: StartRequest{}, Response: Run{}, Status: 201, ETag: true, MaxBody: payloadBodyBytes},
		{Method: "GET", Path: base + "/{run}", Capability: auth.CapRunRead, Handler: s.get,
			OperationID: "getRun", Tag: tagRuns, Summary: "Read a run", Description: "The ETag is the accepted sequence.",
			Response: Run{}, ETag: true},
		{Method: "POST", Path: base + "/{run}/cancel", Capability: auth.CapRunCancel, Idempotency: api.PolicyOptional, Handler: s.cancel,
			OperationID: "cancelRun", Tag: tagRuns, Summary: "Cancel a run",
			Description: "Cancels a run that has not ended; cancelling a cancelled run answers the same snapshot and records nothing; " +
				"another ended run answers 409 PF-RUNTIME-STATE. external_effects_may_continue says whether issued work may still finish. " +
				"A run whose state is over 1 MiB is answered by a large-run acknowledgment (CancelAck: capacity_limited, /state omitted with reason resource_limit).",
			Request: CancelRequest{}, Response: Run{}, ETag: true},
		{Method: "POST", Path: base + "/{run}/retry", Capability: auth.CapRunRetry, Idempotency: api.PolicyRequired, Handler: s.retry,
			OperationID: "retryRun", Tag: tagRuns, Summary: "Retry an ended run as a new run",
			Description: "Starts a new run (parent_run_id = the retried run) like POST E/runs, which also needs run.start; the retried run is unchanged. " +
				"A run that has not ended answers 409 PF-RUNTIME-STATE.",
			Request: StartRequest{}, Response: Run{}, Status: 201, ETag: true, MaxBody: payloadBodyBytes},
		{Method: "GET", Path: base + "/{run}/history", Capability: auth.CapRunRead, Page: true, Handler: s.history,
			OperationID: "getRunHistory", Tag: tagRuns, Summary: "List a run's accepted events in sequence order",
			Response: api.Page[HistoryEvent]{}},
	}
	for _, rt := range routes {
		a.Handle(r, rt)
	}
	add := func(rt api.Route) { a.Handle(r, rt) }
	s.registerIncidents(add)
	s.registerControl(add)
	s.registerLists(add)
	s.registerWorkers(add)
	s.registerHumans(add)
	s.registerArchive(add)
}

// runPath is the canonical path of a run.
func runPath(sc auth.Scope, id string) string {
	return api.Prefix + "/tenants/" + sc.Tenant + "/projects/" + sc.Project + "/environments/" + sc.Environment + "/runs/" + id
}

// requireEnvironment answers 404 unless the path's environment exists.
func requireEnvironment(ctx context.Context, q store.Querier, sc auth.Scope) error {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_environments WHERE id = ? AND project_id = ? AND tenant_id = ?`,
		sc.Environment, sc.Project, sc.Tenant).Scan(&n); err != nil {
		return fmt.Errorf("engine: read environment: %w", err)
	}
	if n == 0 {
		return api.NotFound("environment")
	}
	return nil
}

// checkText checks a body field: at most max characters and, when
// required, not blank. field is its name, also its JSON Pointer.
func checkText(field, v string, max int, required bool) error {
	if required && strings.TrimSpace(v) == "" {
		return api.Invalid("/"+field, "%s must not be blank", field)
	}
	if utf8.RuneCountInString(v) > max {
		return api.Invalid("/"+field, "%s has at most %d characters", field, max)
	}
	return nil
}

// checkStart validates a start request and answers its input (compact,
// "{}" when absent).
func checkStart(req *StartRequest) (json.RawMessage, error) {
	if !auth.IsCanonicalUUID(req.ActivationID) {
		return nil, api.Invalid("/activation_id", "activation_id must be a canonical lowercase UUID")
	}
	if err := checkText("correlation_key", req.CorrelationKey, MaxKeyLen, false); err != nil {
		return nil, err
	}
	if err := checkText("business_key", req.BusinessKey, MaxKeyLen, false); err != nil {
		return nil, err
	}
	raw := bytes.TrimSpace(req.Input)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '{' {
		return nil, api.Invalid("/input", "input must be a JSON object")
	}
	if len(raw) > MaxInputBytes {
		return nil, api.Invalid("/input", "input has %d bytes; at most %d are accepted", len(raw), MaxInputBytes)
	}
	return raw, nil
}

// activationInfo is what a run start reads of its activation.
type activationInfo struct {
	status, versionID string
	defaults          map[string]json.RawMessage
}

// readActivation reads an activation of the environment.
func readActivation(ctx context.Context, q store.Querier, env, id string) (activationInfo, error) {
	var a activationInfo
	var defaults string
	err := q.QueryRowContext(ctx, `SELECT status, published_version_id, input_defaults FROM platform_activations
		WHERE id = ? AND environment_id = ?`, id, env).Scan(&a.status, &a.versionID, &defaults)
	if errors.Is(err, sql.ErrNoRows) {
		return a, api.Invalid("/activation_id", "the environment has no activation with that id")
	}
	if err != nil {
		return a, fmt.Errorf("engine: read activation: %w", err)
	}
	if err := json.Unmarshal([]byte(defaults), &a.defaults); err != nil {
		return a, fmt.Errorf("engine: stored input defaults: %w", err)
	}
	if a.status != "active" {
		return a, api.Conflict(api.CodeConflict, "the activation is retired; start runs of an active activation")
	}
	return a, nil
}

// mergeDefaults fills absent top-level properties of input from defaults.
func mergeDefaults(input json.RawMessage, defaults map[string]json.RawMessage) (json.RawMessage, error) {
	if len(defaults) == 0 {
		return input, nil
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, api.Invalid("/input", "input must be a JSON object")
	}
	for k, v := range defaults {
		if _, ok := in[k]; !ok {
			in[k] = v
		}
	}
	out, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("engine: encode input: %w", err)
	}
	return out, nil
}

// start serves POST E/runs.
func (s *Service) start(c *api.Call) error { return s.startRun(c, "") }

// retry serves POST E/runs/{run}/retry.
func (s *Service) retry(c *api.Call) error {
	id, err := c.UUIDParam("run", "run")
	if err != nil {
		return err
	}
	if err := c.Authorize(auth.CapRunStart, c.PathScope()); err != nil {
		return err
	}
	return s.startRun(c, id)
}

// startRun starts a run, the retry of parent when parent is not "" (see
// planStart and commitStart, shared with StartActivated).
func (s *Service) startRun(c *api.Call, parent string) error {
	var req StartRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	pl, err := s.planStart(ctx, sc, req, parent)
	if err != nil {
		return err
	}
	pl.files = FileAccess{Environment: mayReadFiles(c, sc)}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		run, err := s.commitStart(ctx, tx, pl, by)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: view(run, pl.p), Revision: run.State.Seq, Location: runPath(sc, run.ID)}, nil
	}, s.notify)
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// read loads the run named by the path with its program.
func (s *Service) read(c *api.Call, q store.Querier) (runRow, *program, error) {
	id, err := c.UUIDParam("run", "run")
	if err != nil {
		return runRow{}, nil, err
	}
	ctx, sc := c.Context(), c.PathScope()
	if err := requireEnvironment(ctx, q, sc); err != nil {
		return runRow{}, nil, err
	}
	r, err := s.getRun(ctx, q, sc.Environment, id)
	if errors.Is(err, errNotFound) {
		return r, nil, api.NotFound("run")
	}
	if err != nil {
		return r, nil, err // errLegacy with the row
	}
	p, err := s.program(ctx, q, r.Project, r.PublishedVersionID)
	return r, p, err
}

// get serves GET E/runs/{run}.
func (s *Service) get(c *api.Call) error {
	r, p, err := s.read(c, s.db.Reader())
	if err != nil {
		return err
	}
	return c.Respond(&api.Result{Body: view(r, p), Revision: r.State.Seq})
}

// cancel serves POST E/runs/{run}/cancel.
func (s *Service) cancel(c *api.Call) error {
	var req CancelRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if err := checkText("reason", req.Reason, MaxReasonLen, true); err != nil {
		return err
	}
	if _, err := c.UUIDParam("run", "run"); err != nil {
		return err
	}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		r, p, err := s.read(c, tx)
		if errors.Is(err, errLegacy) {
			return s.cancelLegacy(c.Context(), tx, r, req.Reason)
		}
		if err != nil {
			return nil, err
		}
		if _, err := s.apply(c.Context(), tx, &r, p, kernel.Event{Kind: kernel.EventCancelRequested, Reason: req.Reason}); err != nil &&
			!errors.Is(err, kernel.ErrNoChange) {
			return nil, refusal(err)
		}
		return &api.Result{Body: cancelAnswer(view(r, p), r.State.ExternalEffectsMayContinue), Revision: r.State.Seq}, nil
	}, s.notify)
}

// history serves GET E/runs/{run}/history: accepted events in seq order.
func (s *Service) history(c *api.Call) error {
	id, err := c.UUIDParam("run", "run")
	if err != nil {
		return err
	}
	q, err := c.PageQuery("run-history", map[string]string{"run": id})
	if err != nil {
		return err
	}
	var after int64
	if q.After != "" {
		if after, err = strconv.ParseInt(q.After, 10, 64); err != nil {
			return api.InvalidParameter(api.CodeValidation, "cursor", "the cursor is not valid for this list")
		}
	}
	ctx, r, sc := c.Context(), s.db.Reader(), c.PathScope()
	if err := requireEnvironment(ctx, r, sc); err != nil {
		return err
	}
	run, err := s.getRun(ctx, r, sc.Environment, id)
	if errors.Is(err, errNotFound) {
		return api.NotFound("run")
	} else if err != nil {
		return err
	}
	if err := refuseArchived(ctx, r, id); err != nil {
		return err
	}
	p, err := s.program(ctx, r, run.Project, run.PublishedVersionID)
	if err != nil {
		return err
	}
	rows, err := s.listEvents(ctx, r, id, after, q.Fetch())
	if err != nil {
		return err
	}
	items := make([]HistoryEvent, 0, len(rows))
	for _, e := range rows {
		payload, err := p.sec.event(e.Payload)
		if err != nil {
			return err
		}
		items = append(items, HistoryEvent{Seq: e.Seq, Kind: e.Kind, At: e.At, Event: payload, Records: e.Records})
	}
	page, err := api.MakePage(q, items, func(e HistoryEvent) string { return strconv.FormatInt(e.Seq, 10) })
	if err != nil {
		return err
	}
	return c.OK(page)
}
