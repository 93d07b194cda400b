package trigger

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// tagTriggers is the OpenAPI tag of the routes.
const tagTriggers = "Webhook triggers"

// triggerBase is E/triggers relative to api.Prefix.
const triggerBase = "/tenants/{tenant}/projects/{project}/environments/{environment}/triggers"

// registerTriggers adds the trigger routes and POST /webhooks/{identifier}.
func (s *Service) registerTriggers(a *api.API, r *httprouter.Router) {
	routes := []api.Route{
		{Method: http.MethodPost, Path: triggerBase, Capability: auth.CapTriggerManage, Handler: s.createTrigger,
			OperationID: "createTrigger", Tag: tagTriggers, Summary: "Create a signed webhook trigger",
			Description: "Needs trigger.manage and run.start; runs start as the creator. The answer shows the whsec_ signing secret once " +
				"(it is sealed at rest and never shown again); deliver to POST /webhooks/{id} signed by the Standard Webhooks scheme. " +
				"No Idempotency-Key: each request creates a trigger with a new secret.",
			Request: TriggerRequest{}, Response: CreatedTrigger{}, Status: http.StatusCreated, ETag: true},
		{Method: http.MethodGet, Path: triggerBase, Capability: auth.CapTriggerManage, Page: true, Handler: s.listTriggers,
			OperationID: "listTriggers", Tag: tagTriggers, Summary: "List the environment's triggers",
			Description: "Enabled and disabled triggers in id order, without secrets. Needs trigger.manage.", Response: api.Page[Trigger]{}},
		{Method: http.MethodGet, Path: triggerBase + "/{id}", Capability: auth.CapTriggerManage, Handler: s.getTrigger,
			OperationID: "getTrigger", Tag: tagTriggers, Summary: "Read a trigger (never its secret)", Response: Trigger{}, ETag: true},
		{Method: http.MethodPost, Path: triggerBase + "/{id}/replace", Capability: auth.CapTriggerManage, IfMatch: api.PolicyRequired,
			Handler: s.replaceTrigger, OperationID: "replaceTrigger", Tag: tagTriggers, Summary: "Replace a trigger by a new one",
			Description: "Triggers are immutable: this creates a trigger with a new id, route and secret from the body and disables the " +
				"previous one (replaced_by), so senders move to the new URL and secret (overlap or gap possible). Needs If-Match with the " +
				"previous trigger's revision (1); a disabled one answers 409 PF-CONFLICT.",
			Request: TriggerRequest{}, Response: CreatedTrigger{}, Status: http.StatusCreated, ETag: true},
		{Method: http.MethodPost, Path: triggerBase + "/{id}/disable", Capability: auth.CapTriggerManage, IfMatch: api.PolicyRequired,
			Handler: s.disableTrigger, OperationID: "disableTrigger", Tag: tagTriggers, Summary: "Disable a trigger for good",
			Description: "Its route answers 404 from then on. Needs If-Match (1); disabling again answers 409 PF-CONFLICT.",
			Response:    Trigger{}, ETag: true},
		{Method: http.MethodPost, Path: "/webhooks/{identifier}", Layout: api.Root, Access: api.AccessPublic, MaxBody: MaxWebhookBody,
			Handler: s.receive, OperationID: "receiveWebhook", Tag: tagTriggers, Summary: "Signed webhook delivery: starts a run",
			Description: "Authenticated by the Standard Webhooks signature only (webhook-id, webhook-timestamp within the trigger's " +
				"tolerance, webhook-signature over the exact timestamp and raw body), never by a bearer token. Answers once the run start " +
				"has committed; a replayed webhook-id answers the run it started before (replayed: true). 401 PF-UNAUTHENTICATED for a " +
				"missing, stale or bad signature, 404 for an unknown or disabled trigger, 413 for a body over 1 MiB, 422 PF-VALIDATION when " +
				"the body is not JSON or the mapped input is refused, 403 when the trigger's owner lost run.start, 409 for a retired activation.",
			Response: Delivery{}},
	}
	for _, rt := range routes {
		a.Handle(r, rt)
	}
}

// readTrigger loads the trigger named by the path in the path's
// environment.
func (s *Service) readTrigger(c *api.Call, q store.Querier) (triggerRow, error) {
	id, err := c.UUIDParam("id", "trigger")
	if err != nil {
		return triggerRow{}, err
	}
	if err := requireEnvironment(c, q); err != nil {
		return triggerRow{}, err
	}
	r, err := getTrigger(c.Context(), q, id)
	if errors.Is(err, errNotFound) || (err == nil && r.Environment != c.PathScope().Environment) {
		return triggerRow{}, api.NotFound("trigger")
	}
	return r, err
}

// checkTarget checks the activation a trigger starts: it must be an active
// activation of the environment (the input depends on each delivery, so
// only refusals of the activation count here).
func (s *Service) checkTarget(ctx context.Context, sc auth.Scope, activation string) error {
	err := s.runs.CheckStart(ctx, sc, activation, json.RawMessage("{}"))
	var ae *api.Error
	if err == nil || !errors.As(err, &ae) {
		return err
	}
	if ae.IsConflict() || (len(ae.Diagnostics) > 0 && ae.Diagnostics[0].Path == "/activation_id") {
		return err
	}
	return nil
}

// checkMapping refuses a mapping that does not parse.
func checkMapping(mapping string) error {
	if mapping == "" {
		return nil
	}
	_, err := evalMapping(mapping, json.RawMessage(`{}`), map[string]string{})
	if err != nil && strings.HasPrefix(err.Error(), "binding config:") {
		return api.Invalid("/mapping", "the mapping does not parse: %v", strings.TrimPrefix(err.Error(), "binding config: "))
	}
	return nil
}

// evalMapping evaluates a mapping with the kernel's expression evaluator:
// input.body is the body, input.headers the chosen headers.
func evalMapping(mapping string, body json.RawMessage, headers map[string]string) (json.RawMessage, error) {
	binding, err := json.Marshal(map[string]any{"config": map[string]string{"expr": mapping}})
	if err != nil {
		return nil, err
	}
	in, err := json.Marshal(map[string]any{"body": body, "headers": headers})
	if err != nil {
		return nil, err
	}
	return kernel.EvalBindingConfig(binding, in, nil)
}

// newTrigger builds and stores a trigger from req in tx, answering it with
// its secret.
func (s *Service) newTrigger(c *api.Call, tx *sql.Tx, req TriggerRequest, replaces *string) (CreatedTrigger, error) {
	sc := c.PathScope()
	secret, err := newSecret()
	if err != nil {
		return CreatedTrigger{}, err
	}
	id := s.newID()
	sealed, err := s.box.SealString(secret, id)
	if err != nil {
		return CreatedTrigger{}, fmt.Errorf("trigger: seal secret: %w", err)
	}
	r := triggerRow{Trigger: Trigger{ID: id, Revision: 1, Status: TriggerEnabled, Name: req.Name, ActivationID: req.ActivationID,
		Mapping: req.Mapping, Headers: req.Headers, Tolerance: req.Tolerance, URL: webhookPath(id), PrincipalID: c.Caller.Principal.ID,
		Replaces: replaces, CreatedAt: s.timestamp()}, Tenant: sc.Tenant, Project: sc.Project, Environment: sc.Environment, sealed: sealed}
	if err := insertTrigger(c.Context(), tx, r); err != nil {
		return CreatedTrigger{}, err
	}
	return CreatedTrigger{Trigger: r.Trigger, Secret: secret}, nil
}

// decodeTrigger reads and checks a TriggerRequest, its activation and
// mapping, and the caller's run.start.
func (s *Service) decodeTrigger(c *api.Call) (TriggerRequest, error) {
	var req TriggerRequest
	if err := c.Decode(&req); err != nil {
		return req, err
	}
	if err := checkTrigger(&req); err != nil {
		return req, err
	}
	if err := checkMapping(req.Mapping); err != nil {
		return req, err
	}
	if err := c.Authorize(auth.CapRunStart, c.PathScope()); err != nil {
		return req, err
	}
	if err := requireEnvironment(c, s.db.Reader()); err != nil {
		return req, err
	}
	return req, s.checkTarget(c.Context(), c.PathScope(), req.ActivationID)
}

// createTrigger serves POST E/triggers.
func (s *Service) createTrigger(c *api.Call) error {
	req, err := s.decodeTrigger(c)
	if err != nil {
		return err
	}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		t, err := s.newTrigger(c, tx, req, nil)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: t, Revision: t.Revision, Location: triggerPath(c.PathScope(), t.ID)}, nil
	}, nil)
}

// replaceTrigger serves POST E/triggers/{id}/replace.
func (s *Service) replaceTrigger(c *api.Call) error {
	req, err := s.decodeTrigger(c)
	if err != nil {
		return err
	}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		prev, err := s.enabledTrigger(c, tx)
		if err != nil {
			return nil, err
		}
		t, err := s.newTrigger(c, tx, req, &prev.ID)
		if err != nil {
			return nil, err
		}
		if err := disableTrigger(c.Context(), tx, prev.ID, c.Caller.Principal.ID, t.ID, t.CreatedAt); err != nil {
			return nil, err
		}
		s.forget(prev.ID)
		return &api.Result{Body: t, Revision: t.Revision, Location: triggerPath(c.PathScope(), t.ID)}, nil
	}, nil)
}

// enabledTrigger reads the path's trigger in tx and applies the change
// rules: If-Match must be its revision, and it must still be enabled.
func (s *Service) enabledTrigger(c *api.Call, tx *sql.Tx) (triggerRow, error) {
	prev, err := s.readTrigger(c, tx)
	if err != nil {
		return prev, err
	}
	if err := api.CheckRevision(c.IfMatch(), prev.Revision); err != nil {
		return prev, err
	}
	if prev.Status != TriggerEnabled {
		return prev, api.Conflict(api.CodeConflict, "the trigger is disabled for good; create a new one")
	}
	return prev, nil
}

// disableTrigger serves POST E/triggers/{id}/disable.
func (s *Service) disableTrigger(c *api.Call) error {
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		prev, err := s.enabledTrigger(c, tx)
		if err != nil {
			return nil, err
		}
		if err := disableTrigger(c.Context(), tx, prev.ID, c.Caller.Principal.ID, "", s.timestamp()); err != nil {
			return nil, err
		}
		s.forget(prev.ID)
		r, err := getTrigger(c.Context(), tx, prev.ID)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: r.Trigger, Revision: r.Revision}, nil
	}, nil)
}

// listTriggers serves GET E/triggers.
func (s *Service) listTriggers(c *api.Call) error {
	q, err := c.PageQuery("triggers", nil)
	if err != nil {
		return err
	}
	r := s.db.Reader()
	if err := requireEnvironment(c, r); err != nil {
		return err
	}
	rows, err := listTriggers(c.Context(), r, c.PathScope().Environment, q.After, q.Fetch())
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, rows, func(t Trigger) string { return t.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// getTrigger serves GET E/triggers/{id}.
func (s *Service) getTrigger(c *api.Call) error {
	r, err := s.readTrigger(c, s.db.Reader())
	if err != nil {
		return err
	}
	return c.Respond(&api.Result{Body: r.Trigger, Revision: r.Revision})
}

// receive serves POST /webhooks/{identifier}: verify, map, start.
func (s *Service) receive(c *api.Call) error {
	ctx := c.Context()
	id := c.Params.ByName("identifier")
	if !auth.IsCanonicalUUID(id) {
		return api.NotFound("enabled trigger")
	}
	rd := s.db.Reader()
	tr, err := getTrigger(ctx, rd, id)
	if errors.Is(err, errNotFound) || (err == nil && tr.Status != TriggerEnabled) {
		return api.NotFound("enabled trigger")
	}
	if err != nil {
		return err
	}
	body, err := c.Body()
	if err != nil {
		return err
	}
	key, err := s.key(tr)
	if err != nil {
		return err
	}
	wid, err := verify(c.R.Header, body, key, s.now(), time.Duration(tr.Tolerance)*time.Second)
	if err != nil {
		return err
	}
	if run, err := deliveryRun(ctx, rd, tr.ID, wid); err != nil || run != "" {
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, Delivery{TriggerID: tr.ID, WebhookID: wid, RunID: run, Replayed: true})
	}
	input, err := mapInput(tr.Trigger, body, c.R.Header)
	if err != nil {
		return err
	}
	sc := auth.Scope{Tenant: tr.Tenant, Project: tr.Project, Environment: tr.Environment}
	if d, err := s.standing(ctx, tr.PrincipalID, auth.CapRunStart, sc); err != nil {
		return err
	} else if !d.Allowed {
		return api.Forbidden("the trigger's owner no longer holds run.start in the environment; replace the trigger")
	}
	replayed := false
	info, err := s.runs.StartActivation(ctx, engine.LocalStart{Scope: sc, ActivationID: tr.ActivationID, Input: input, By: tr.PrincipalID,
		Commit: func(tx *sql.Tx, run engine.RunInfo) error {
			ok, err := insertDelivery(ctx, tx, tr.ID, wid, run.ID, s.timestamp())
			if err == nil && !ok {
				replayed = true
				return errMoved
			}
			return err
		}})
	if replayed {
		run, err := deliveryRun(ctx, s.db.Reader(), tr.ID, wid)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, Delivery{TriggerID: tr.ID, WebhookID: wid, RunID: run, Replayed: true})
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, Delivery{TriggerID: tr.ID, WebhookID: wid, RunID: info.ID})
}

// mapInput makes a delivery's run input: the body (a JSON object) or the
// trigger's mapping of it and its chosen headers.
func mapInput(t Trigger, body []byte, h http.Header) (json.RawMessage, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || !json.Valid(body) {
		return nil, api.Invalid("", "the body must be JSON")
	}
	if t.Mapping == "" {
		if body[0] != '{' {
			return nil, api.Invalid("", "the body must be a JSON object (the run input), or the trigger needs a mapping")
		}
		return body, nil
	}
	headers := make(map[string]string, len(t.Headers))
	for _, name := range t.Headers {
		if v := h.Values(name); len(v) > 0 {
			headers[name] = strings.Join(v, ", ")
		}
	}
	out, err := evalMapping(t.Mapping, body, headers)
	if err != nil {
		return nil, api.Invalid("", "the trigger's mapping failed on this delivery: %v", err)
	}
	if len(out) == 0 || out[0] != '{' {
		return nil, api.Invalid("", "the trigger's mapping must give a JSON object (the run input)")
	}
	return out, nil
}

// triggerPath is the canonical path of a trigger.
func triggerPath(sc auth.Scope, id string) string {
	return api.Prefix + "/tenants/" + sc.Tenant + "/projects/" + sc.Project + "/environments/" + sc.Environment + "/triggers/" + id
}
