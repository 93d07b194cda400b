package platform_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/activation"
	"github.com/agentbridge/bridge/platform/identity"
)

// secretWorkflow declares a secret-marked input property.
const secretWorkflow = `kind: workflow
id: acme/secretive
version: 1
input:
  type: object
  properties:
    customerId: {type: string}
    apiKey: {type: string, x-secret: true}
steps:
  - id: lookup
    action: acme/lookup@1
    with:
      customerId: =input.customerId
`

// ePath is E of the bootstrapped environment.
func ePath(h *harness) string { return h.envPath(h.ws.TenantID, h.ws.ProjectID, h.ws.EnvironmentID) }

// activate posts an ActivationRequest (body as is) to env with key and
// ifMatch ("" leaves a header out).
func (h *harness) activate(env, tok string, body any, key, ifMatch string) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if key != "" {
		hdr["Idempotency-Key"] = key
	}
	if ifMatch != "" {
		hdr["If-Match"] = ifMatch
	}
	return h.do(req{method: "POST", path: env + "/activations", token: tok, hdr: hdr, body: body})
}

func (h *harness) retireActivation(env, tok, id string, body any, key, ifMatch string) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if key != "" {
		hdr["Idempotency-Key"] = key
	}
	if ifMatch != "" {
		hdr["If-Match"] = ifMatch
	}
	return h.do(req{method: "POST", path: env + "/activations/" + id + "/retire", token: tok, hdr: hdr, body: body})
}

func (h *harness) mustActivate(env, tok string, body any, key, ifMatch string) activation.Activation {
	h.t.Helper()
	var a activation.Activation
	h.must(201, h.activate(env, tok, body, key, ifMatch), &a)
	return a
}

func TestActivationLifecycle(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	ids := seedDefinitions(h)
	wf := ids["workflows"]
	E := ePath(h)
	body := map[string]any{"published_version_id": wf, "input_defaults": map[string]any{"customerId": "c-1"},
		"connection_bindings": map[string]string{"crm": "0190a0b0-0000-7000-8000-0000000000c1"}, "name": "onboarding"}

	// Idempotency-Key: required, 1..200 characters.
	h.problem(422, "PF-IDEMPOTENCY", h.activate(E, op, body, "", ""))
	h.problem(422, "PF-IDEMPOTENCY", h.do(req{method: "POST", path: E + "/activations", token: op, body: body,
		hdrs: map[string][]string{"Idempotency-Key": {""}}}))
	h.problem(422, "PF-IDEMPOTENCY", h.activate(E, op, body, strings.Repeat("k", 201), ""))

	// The body contract.
	for name, bad := range map[string]any{
		"unknown field":      map[string]any{"published_version_id": wf, "extra": 1},
		"missing version":    map[string]any{"name": "x"},
		"bad uuid":           map[string]any{"published_version_id": "not-a-uuid"},
		"upper-case uuid":    map[string]any{"published_version_id": strings.ToUpper(wf)},
		"unknown version":    map[string]any{"published_version_id": "0190a0b0-0000-7000-8000-00000000dead"},
		"not a workflow":     map[string]any{"published_version_id": ids["actions"]},
		"defaults not obj":   map[string]any{"published_version_id": wf, "input_defaults": []int{1}},
		"defaults schema":    map[string]any{"published_version_id": wf, "input_defaults": map[string]any{"customerId": 5}},
		"defaults too large": map[string]any{"published_version_id": wf, "input_defaults": map[string]any{"customerId": strings.Repeat("x", 64<<10)}},
		"binding not uuid":   map[string]any{"published_version_id": wf, "connection_bindings": map[string]string{"crm": "nope"}},
		"binding empty name": map[string]any{"published_version_id": wf, "connection_bindings": map[string]string{"": "0190a0b0-0000-7000-8000-0000000000c1"}},
		"binding not string": map[string]any{"published_version_id": wf, "connection_bindings": map[string]int{"crm": 1}},
		"name too long":      map[string]any{"published_version_id": wf, "name": strings.Repeat("n", 201)},
	} {
		t.Run(name, func(t *testing.T) {
			checkProblem(t, 422, "PF-VALIDATION", h.activate(E, op, bad, "bad-"+name, ""))
		})
	}
	p := h.problem(422, "PF-VALIDATION", h.activate(E, op, map[string]any{"published_version_id": wf, "input_defaults": map[string]any{"customerId": 5}}, "k-schema", ""))
	is.Equal(p.Diagnostics[0].Path, "/input_defaults/customerId")
	p = h.problem(422, "PF-VALIDATION", h.activate(E, op, map[string]any{"published_version_id": ids["decision-tables"]}, "k-kind", ""))
	is.Equal(p.Diagnostics[0].Path, "/published_version_id")
	// A secret-marked default is refused; other defaults of that workflow pass.
	sec := h.mustPublish(op, "workflows", secretWorkflow, "secretive").ID
	p = h.problem(422, activation.CodeSecretValue, h.activate(E, op, map[string]any{"published_version_id": sec,
		"input_defaults": map[string]any{"customerId": "c", "apiKey": "hunter2"}}, "k-secret", ""))
	is.Equal(p.Diagnostics[0].Path, "/input_defaults/apiKey")
	is.True(!strings.Contains(string(h.activate(E, op, map[string]any{"published_version_id": sec,
		"input_defaults": map[string]any{"apiKey": "hunter2"}}, "k-secret2", "").body), "hunter2"))

	// Malformed If-Match; If-Match without an active activation to replace.
	for _, v := range []string{`W/"1"`, "*", `"0"`, "01", "+1", `"1", "2"`} {
		h.problem(422, "PF-ETAG", h.activate(E, op, body, "k-etag", v))
	}
	h.problem(412, "PF-ETAG", h.activate(E, op, body, "k-412", `"1"`))

	// Create; a 200-character key is accepted.
	key := strings.Repeat("a", 200)
	res := h.activate(E, op, body, key, "")
	var a activation.Activation
	h.must(201, res, &a)
	is.Equal(res.header.Get("ETag"), `"1"`)
	is.Equal(res.header.Get("Location"), E+"/activations/"+a.ID)
	is.Equal(a.PublishedVersionID, wf)
	is.Equal(a.EnvironmentID, h.ws.EnvironmentID)
	is.Equal(a.ProjectID, h.ws.ProjectID)
	is.Equal(a.WorkflowID, "acme/onboard")
	is.Equal(a.WorkflowVersion, 1)
	is.True(strings.HasPrefix(a.Digest, "sha256:"))
	is.Equal(string(a.InputDefaults), `{"customerId":"c-1"}`)
	is.Equal(a.ConnectionBindings, map[string]string{"crm": "0190a0b0-0000-7000-8000-0000000000c1"})
	is.Equal(*a.Name, "onboarding")
	is.Equal(a.Status, "active")
	is.Equal(a.Revision, int64(1))
	is.Equal(a.CreatedBy, h.ws.OperatorID)
	is.True(a.RetiredAt == nil && a.RetiredBy == nil && a.RetirementReason == nil)

	// Replay: same key and body; another body answers 409.
	res = h.activate(E, op, body, key, "")
	var again activation.Activation
	h.must(201, res, &again)
	is.Equal(again.ID, a.ID)
	is.Equal(res.header.Get("Idempotent-Replayed"), "true")
	is.Equal(res.header.Get("ETag"), `"1"`)
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", h.activate(E, op, map[string]any{"published_version_id": wf}, key, ""))

	// One active activation per workflow: 409 without If-Match, 412 when
	// stale, replacement with the current revision.
	v2 := h.mustPublish(op, "workflows", strings.Replace(onboardWorkflow, "version: 1", "version: 2", 1), "onboard-v2").ID
	res = h.activate(E, op, map[string]any{"published_version_id": v2}, "k-v2", "")
	h.problem(409, "PF-CONFLICT", res)
	is.Equal(res.header.Get("ETag"), `"1"`)
	h.problem(412, "PF-ETAG", h.activate(E, op, map[string]any{"published_version_id": v2}, "k-v2", `"2"`))
	b := h.mustActivate(E, op, map[string]any{"published_version_id": v2}, "k-v2", `"1"`)
	is.Equal(b.WorkflowVersion, 2)
	is.Equal(string(b.InputDefaults), `{}`)
	is.Equal(b.ConnectionBindings, map[string]string{})
	is.True(b.Name == nil)
	var old activation.Activation
	res = h.get(E+"/activations/"+a.ID, op)
	h.must(200, res, &old)
	is.Equal(res.header.Get("ETag"), `"2"`)
	is.Equal(old.Status, "retired")
	is.Equal(*old.RetirementReason, "replaced by activation "+b.ID)
	is.Equal(*old.RetiredBy, h.ws.OperatorID)

	// Reads: ETag, HEAD, compatibility path, 404s.
	var got activation.Activation
	res = h.get(E+"/activations/"+b.ID, op)
	h.must(200, res, &got)
	is.Equal(got, b)
	is.Equal(res.header.Get("ETag"), `"1"`)
	head := h.do(req{method: "HEAD", path: E + "/activations/" + b.ID, token: op})
	is.Equal(head.status, 200)
	is.Equal(len(head.body), 0)
	is.Equal(head.header.Get("ETag"), `"1"`)
	h.must(200, h.get(strings.TrimPrefix(E, "/api/v1")+"/activations/"+b.ID, op), &got)
	is.Equal(got.ID, b.ID)
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/activations/0190a0b0-0000-7000-8000-00000000dead", op))
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/activations/not-a-uuid", op))
	other := h.environment(h.ws.ProjectID, "other")
	E2 := h.envPath(h.ws.TenantID, h.ws.ProjectID, other.ID)
	h.problem(404, "PF-NOT-FOUND", h.get(E2+"/activations/"+b.ID, op))
	h.problem(404, "PF-NOT-FOUND", h.get(E2+"/activations/"+b.ID+"/export", op))
	h.problem(404, "PF-NOT-FOUND", h.retireActivation(E2, op, b.ID, nil, "r-other", `"1"`))
	unknownEnv := h.envPath(h.ws.TenantID, h.ws.ProjectID, "0190a0b0-0000-7000-8000-00000000beef")
	h.problem(404, "PF-NOT-FOUND", h.get(unknownEnv+"/activations", op))
	h.problem(404, "PF-NOT-FOUND", h.activate(unknownEnv, op, body, "k-env", ""))
	// The version must belong to the environment's project.
	pb := h.project("beta")
	eb := h.environment(pb.ID, "dev")
	Eb := h.envPath(h.ws.TenantID, pb.ID, eb.ID)
	h.problem(422, "PF-VALIDATION", h.activate(Eb, op, map[string]any{"published_version_id": wf}, "k-proj", ""))
	// The same workflow may be active in another environment.
	h.mustActivate(E2, op, map[string]any{"published_version_id": wf}, "k-e2", "")

	// Export: the activation and the bound version, enough to reproduce it.
	var ex activation.Export
	h.must(200, h.get(E+"/activations/"+a.ID+"/export", op), &ex)
	is.Equal(ex.Activation, old)
	is.Equal(ex.Workflow.PublishedVersionID, wf)
	is.Equal(ex.Workflow.ID, "acme/onboard")
	is.Equal(ex.Workflow.Version, 1)
	is.Equal(ex.Workflow.Digest, a.Digest)
	is.Equal(ex.Workflow.Source, onboardWorkflow)
	is.Equal(ex.Workflow.Format, "yaml")
	var art map[string]any
	is.NoErr(json.Unmarshal(ex.Workflow.Artifact, &art))
	is.Equal(art["id"], "acme/onboard")
	at, err := time.Parse(time.RFC3339, ex.ExportedAt)
	is.NoErr(err)
	is.True(!at.IsZero())
	is.Equal(len(ex.ExportedAt), len("2006-01-02T15:04:05.000Z"))
	is.Equal(h.do(req{method: "HEAD", path: E + "/activations/" + a.ID + "/export", token: op}).status, 200)

	// Retire: If-Match and Idempotency-Key required; stale revision 412.
	R := func(body any, key, ifMatch string) resp { return h.retireActivation(E, op, b.ID, body, key, ifMatch) }
	h.problem(422, "PF-ETAG", R(nil, "r1", ""))
	h.problem(422, "PF-IDEMPOTENCY", R(nil, "", `"1"`))
	h.problem(422, "PF-IDEMPOTENCY", R(nil, strings.Repeat("r", 201), `"1"`))
	for _, v := range []string{`W/"1"`, "*", "0", `"01"`, "-1", "1,2"} {
		h.problem(422, "PF-ETAG", R(nil, "r1", v))
	}
	res = R(nil, "r1", `"2"`)
	h.problem(412, "PF-ETAG", res)
	is.Equal(res.header.Get("ETag"), `"1"`)
	h.problem(422, "PF-VALIDATION", R(map[string]any{"why": "x"}, "r1", `"1"`))
	h.problem(422, "PF-VALIDATION", R(map[string]any{"reason": strings.Repeat("x", 2001)}, "r1", `"1"`))
	h.problem(404, "PF-NOT-FOUND", h.retireActivation(E, op, "0190a0b0-0000-7000-8000-00000000dead", nil, "r1", `"1"`))
	reason := map[string]any{"reason": "rolled back"}
	res = R(reason, "r1", `"1"`)
	var ret activation.Activation
	h.must(200, res, &ret)
	is.Equal(res.header.Get("ETag"), `"2"`)
	is.Equal(ret.Status, "retired")
	is.Equal(ret.Revision, int64(2))
	is.Equal(*ret.RetirementReason, "rolled back")
	is.True(ret.RetiredAt != nil)
	res = R(reason, "r1", `"1"`)
	h.must(200, res, &got)
	is.Equal(res.header.Get("Idempotent-Replayed"), "true")
	is.Equal(got, ret)
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", R(map[string]any{"reason": "other"}, "r1", `"1"`))
	h.problem(409, "PF-CONFLICT", R(nil, "r2", `"2"`))
	h.problem(409, "PF-CONFLICT", R(nil, "r3", `"1"`))
	// With none active, the workflow is activated again without If-Match.
	h.mustActivate(E, op, map[string]any{"published_version_id": v2}, "k-v2-again", "")
}

func TestActivationList(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	ids := seedDefinitions(h)
	E := ePath(h)
	// Five activations of the same workflow, each replacing the previous:
	// four retired, one active.
	var made []string
	for i := range 5 {
		ifMatch := ""
		if i > 0 {
			ifMatch = `"1"`
		}
		made = append(made, h.mustActivate(E, op, map[string]any{"published_version_id": ids["workflows"]}, "list-"+string(rune('a'+i)), ifMatch).ID)
	}
	page := func(query string) activationPage {
		t.Helper()
		var p activationPage
		h.must(200, h.get(E+"/activations"+query, op), &p)
		return p
	}
	all := page("")
	is.Equal(len(all.Items), 5)
	is.True(all.NextCursor == nil)
	for i, a := range all.Items {
		is.Equal(a.ID, made[i]) // id order is creation order
	}
	is.Equal(len(page("?limit=100").Items), 5)
	is.Equal(len(page("?status=active").Items), 1)
	is.Equal(page("?status=active").Items[0].ID, made[4])
	is.Equal(len(page("?status=retired").Items), 4)

	// Walk with limit 1 and the retired filter.
	var walked []string
	q := "?status=retired&limit=1"
	for {
		p := page(q)
		for _, a := range p.Items {
			walked = append(walked, a.ID)
		}
		if p.NextCursor == nil {
			break
		}
		q = "?status=retired&limit=1&cursor=" + *p.NextCursor
	}
	is.Equal(walked, made[:4])

	first := page("?limit=2")
	is.True(first.NextCursor != nil)
	cur := *first.NextCursor
	is.Equal(page("?limit=2&cursor=" + cur).Items[0].ID, made[2])
	for _, bad := range []string{"?limit=0", "?limit=101", "?limit=-1", "?limit=x", "?limit=1&limit=2", "?status=gone",
		"?cursor=", "?cursor=garbage", "?status=retired&cursor=" + cur, "?unknown=1"} {
		h.problem(422, "PF-VALIDATION", h.get(E+"/activations"+bad, op))
	}
	// A cursor is bound to its environment and collection.
	other := h.environment(h.ws.ProjectID, "other")
	E2 := h.envPath(h.ws.TenantID, h.ws.ProjectID, other.ID)
	h.problem(422, "PF-VALIDATION", h.get(E2+"/activations?cursor="+cur, op))
	h.problem(422, "PF-VALIDATION", h.get(pPath(h)+"/workflows?cursor="+cur, op))
	is.Equal(len(page("").Items), 5)
	var empty activationPage
	h.must(200, h.get(E2+"/activations", op), &empty)
	is.Equal(len(empty.Items), 0)
	is.True(empty.NextCursor == nil)
	head := h.do(req{method: "HEAD", path: E + "/activations", token: op})
	is.Equal(head.status, 200)
	is.Equal(len(head.body), 0)
	// Compatibility path.
	h.must(200, h.get(strings.TrimPrefix(E, "/api/v1")+"/activations", op), &empty)
	is.Equal(len(empty.Items), 5)
}

type activationPage struct {
	Items      []activation.Activation `json:"items"`
	NextCursor *string                 `json:"next_cursor"`
}

func TestActivationAccess(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	ids := seedDefinitions(h)
	E := ePath(h)
	T, P, Env := h.ws.TenantID, h.ws.ProjectID, h.ws.EnvironmentID
	envScope := identity.Scope{Tenant: T, Project: P, Environment: Env}
	a := h.mustActivate(E, op, map[string]any{"published_version_id": ids["workflows"]}, "acc-1", "")
	body := map[string]any{"published_version_id": ids["workflows"]}

	// 401 without a token on every route.
	for _, r := range []req{
		{method: "GET", path: E + "/activations"},
		{method: "POST", path: E + "/activations", body: body, hdr: map[string]string{"Idempotency-Key": "x"}},
		{method: "GET", path: E + "/activations/" + a.ID},
		{method: "GET", path: E + "/activations/" + a.ID + "/export"},
		{method: "POST", path: E + "/activations/" + a.ID + "/retire", hdr: map[string]string{"Idempotency-Key": "x", "If-Match": "1"}},
	} {
		h.problem(401, "PF-UNAUTHENTICATED", h.do(r))
	}

	// A viewer reads but neither activates nor retires.
	_, viewer := h.user("vera", "viewer", envScope)
	h.must(200, h.get(E+"/activations", viewer), nil)
	h.must(200, h.get(E+"/activations/"+a.ID, viewer), nil)
	h.must(200, h.get(E+"/activations/"+a.ID+"/export", viewer), nil)
	h.problem(403, "PF-FORBIDDEN", h.activate(E, viewer, body, "v-1", `"1"`))
	h.problem(403, "PF-FORBIDDEN", h.retireActivation(E, viewer, a.ID, nil, "v-2", `"1"`))

	// release.retire alone: no reads.
	retirer := h.link("human", "rita")
	h.grant(retirer, envScope, "", "release.retire")
	rTok := h.ext.token(t, "rita", nil)
	h.problem(403, "PF-FORBIDDEN", h.get(E+"/activations", rTok))
	h.problem(403, "PF-FORBIDDEN", h.get(E+"/activations/"+a.ID, rTok))
	h.problem(403, "PF-FORBIDDEN", h.get(E+"/activations/"+a.ID+"/export", rTok))
	h.problem(403, "PF-FORBIDDEN", h.activate(E, rTok, body, "r-1", ""))

	// release.activate without release.retire: creates, but replacing
	// (which retires the active one) is refused and nothing changes.
	activator := h.link("human", "alex")
	h.grant(activator, envScope, "", "release.activate")
	aTok := h.ext.token(t, "alex", nil)
	h.problem(403, "PF-FORBIDDEN", h.activate(E, aTok, body, "a-1", `"1"`))
	h.problem(403, "PF-FORBIDDEN", h.retireActivation(E, aTok, a.ID, nil, "a-2", `"1"`))
	var cur activation.Activation
	h.must(200, h.get(E+"/activations/"+a.ID, op), &cur)
	is.Equal(cur.Status, "active")
	sec := h.mustPublish(op, "workflows", secretWorkflow, "acc-secretive").ID
	h.must(201, h.activate(E, aTok, map[string]any{"published_version_id": sec}, "a-3", ""), nil)

	// A grant on one environment does not reach another.
	other := h.environment(P, "other")
	E2 := h.envPath(T, P, other.ID)
	h.problem(403, "PF-FORBIDDEN", h.get(E2+"/activations", viewer))
	h.problem(403, "PF-FORBIDDEN", h.activate(E2, aTok, body, "a-4", ""))

	// A deployer on the environment retires; the decision is audited.
	_, dep := h.user("dora", "deployer", envScope)
	res := h.retireActivation(E, dep, a.ID, nil, "d-1", `"1"`)
	h.must(200, res, &cur)
	is.Equal(cur.Status, "retired")
	rows := h.audit(res.header.Get("X-Platform-Request-ID"))
	is.True(len(rows) >= 1)
	is.Equal(rows[0].Capability, "release.retire")
	is.True(rows[0].Allowed)
	is.Equal(rows[0].Environment, Env)
}
