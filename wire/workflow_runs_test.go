package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/bridge/provider/providertest"
	"github.com/agentbridge/bridge/client"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/platform/identity"
	"github.com/agentbridge/bridge/wire"
)

func TestMain(m *testing.M) {
	os.Setenv("BRIDGE_DISABLE_KEYRING", "1")
	os.Exit(m.Run())
}

// Workflows of the local project: a greeting that fails for "nobody", one
// that is published but never activated, and a triage of two agent steps
// (the fake agent answers its prompt).
const (
	greetingWorkflow = `kind: workflow
id: acme/greeting
version: 1
input:
  type: object
  required: [name]
  properties:
    name: {type: string}
    title: {type: string}
output:
  type: object
  properties:
    greeting: {type: string}
steps:
  - id: route
    switch:
      - when: =input.name == "nobody"
        next: refuse
    default: done
  - id: done
    succeed:
      result:
        greeting: ="hello " + input.title + " " + input.name
  - id: refuse
    fail:
      code: NO_NAME
      message: nobody has no name
`
	idleWorkflow = `kind: workflow
id: acme/idle
version: 1
input: {type: object}
steps:
  - id: done
    succeed:
      result: {}
`
	triageWorkflow = `kind: workflow
id: acme/triage
version: 1
input:
  type: object
  required: [ticket]
  properties:
    ticket: {type: string}
output:
  type: object
  properties:
    category: {type: string}
    summary: {type: string}
steps:
  - id: classify
    agent:
      provider: claude
      instructions: You triage support tickets.
      prompt: '="Classify this ticket: " + input.ticket'
      output:
        type: object
        required: [category]
        properties:
          category: {type: string, enum: [bug, billing]}
    timeout: 1m
  - id: summarize
    agent:
      provider: claude
      prompt: '="Summary: " + steps.classify.output.category'
  - id: done
    succeed:
      result:
        category: =steps.classify.output.category
        summary: =steps.summarize.output
`
)

// daemonEnv is the whole daemon (wire.OptionsWith) started in process,
// with the bridge's claude profile pointing at the fake agent.
type daemonEnv struct {
	t                *testing.T
	dir, yaml        string
	d                *daemon.Daemon
	bridge, services string
	owner, op        string
	ws               identity.LocalWorkspace
	hc               *http.Client
}

func newDaemonEnv(t *testing.T, extraYAML ...string) *daemonEnv {
	e := &daemonEnv{t: t, dir: t.TempDir(), hc: &http.Client{Timeout: 30 * time.Second}}
	claude, _ := providertest.BuildFakeAgent(t, t.TempDir())
	e.yaml = fmt.Sprintf("bridge:\n  inactivity-timeout: 5s\n  profiles:\n    default: {provider: echo}\n    claude: {provider: claude, command: %q}\n", claude) + strings.Join(extraYAML, "")
	e.start()
	return e
}

func (e *daemonEnv) start() {
	e.t.Helper()
	file, err := config.Parse("config.yaml", []byte(e.yaml))
	if err != nil {
		e.t.Fatal(err)
	}
	file.LookupEnv = func(string) (string, bool) { return "", false }
	cfg := daemon.DefaultConfig()
	cfg.Listen.BridgePort, cfg.Listen.ServicesPort = 0, 0
	d, err := daemon.Start(context.Background(), wire.OptionsWith(daemon.Options{DataDir: e.dir, Config: cfg, File: file, DisableKeyring: true}, wire.BridgeOptions{}))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { d.Shutdown() })
	e.d, e.bridge, e.services = d, d.State().BridgeURL, d.State().ServicesURL
	if e.owner, err = daemon.ReadOwnerToken(filepath.Join(e.dir, daemon.OwnerTokenFile)); err != nil {
		e.t.Fatal(err)
	}
	ws, err := identity.ReadLocalWorkspace(context.Background(), d.DB.Reader())
	if err != nil || ws == nil {
		e.t.Fatalf("local workspace: %v", err)
	}
	e.ws, e.op = *ws, ""
}

func (e *daemonEnv) restart() {
	e.t.Helper()
	if err := e.d.Shutdown(); err != nil {
		e.t.Fatal(err)
	}
	e.start()
}

// res is a response read whole.
type res struct {
	status int
	header http.Header
	body   []byte
}

func (r res) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return m
}

func (r res) code() string {
	var m struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(r.body, &m)
	return m.Error.Code
}

// do sends a request with a bearer token; body is JSON unless a string.
func (e *daemonEnv) do(method, url, token string, body any, hdr ...string) res {
	e.t.Helper()
	var rd io.Reader
	if s, ok := body.(string); ok {
		rd = strings.NewReader(s)
	} else if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	r, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer r.Body.Close()
	data, _ := io.ReadAll(r.Body)
	return res{status: r.StatusCode, header: r.Header, body: data}
}

// must asserts the status of r and decodes its body.
func (e *daemonEnv) must(status int, r res) map[string]any {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	return r.json(e.t)
}

// token mints a bridge client token (all profiles) through the typed client.
func (e *daemonEnv) token(id, scopes string) string {
	e.t.Helper()
	var issued client.IssuedToken
	_, err := client.New(e.bridge, e.owner, e.hc).Do(context.Background(), "POST", "/v1/bridge/admin/tokens", nil,
		client.TokenRequest{ID: id, Scopes: strings.Split(scopes, ","), Profiles: []string{"*"}}, &issued)
	if err != nil || issued.Token == "" {
		e.t.Fatalf("mint a token for %s: %v", id, err)
	}
	return issued.Token
}

// platform is the typed platform API as the local operator, and the
// local environment.
func (e *daemonEnv) platform() (client.Platform, client.Env) {
	return client.Platform{D: client.New(e.services, e.operator(), e.hc)},
		client.Env{Tenant: e.ws.TenantID, Project: e.ws.ProjectID, Environment: e.ws.EnvironmentID}
}

// operator signs the local operator in through the built-in provider's
// device flow (approved with the owner token) and answers its token.
func (e *daemonEnv) operator() string {
	e.t.Helper()
	if e.op != "" {
		return e.op
	}
	form := func(path string, v url.Values, bearer string) map[string]any {
		req, _ := http.NewRequest("POST", e.services+"/idp"+path, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		r, err := e.hc.Do(req)
		if err != nil {
			e.t.Fatal(err)
		}
		defer r.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(r.Body).Decode(&out)
		if r.StatusCode != 200 {
			e.t.Fatalf("%s: %d %v", path, r.StatusCode, out)
		}
		return out
	}
	dc := form("/oauth/device/code", url.Values{"client_id": {"bridge-cli"}}, "")
	form("/oauth/device/approve", url.Values{"user_code": {dc["user_code"].(string)}}, e.owner)
	tok := form("/oauth/token", url.Values{"client_id": {"bridge-cli"}, "device_code": {dc["device_code"].(string)},
		"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}}, "")
	e.op = tok["access_token"].(string)
	return e.op
}

func (e *daemonEnv) projectURL() string {
	return e.services + "/api/v1/tenants/" + e.ws.TenantID + "/projects/" + e.ws.ProjectID
}

// publish publishes a workflow in the local project and, when activate,
// activates it in the local environment (through the typed client); it
// answers the published version id.
func (e *daemonEnv) publish(src string, activate bool) string {
	e.t.Helper()
	ctx := context.Background()
	p, env := e.platform()
	v, _, err := p.Publish(ctx, env, "workflows", "publish-"+fmt.Sprint(time.Now().UnixNano()), client.PublishRequest{Source: src, Format: client.FormatYAML})
	if err != nil {
		e.t.Fatalf("publish: %v", err)
	}
	if activate {
		if _, err := p.Activate(ctx, env, "activate-"+v.ID, client.ActivationRequest{PublishedVersionID: v.ID}); err != nil {
			e.t.Fatalf("activate %s: %v", v.ID, err)
		}
	}
	return v.ID
}

// startRun posts a workflow run as tok.
func (e *daemonEnv) startRun(tok string, body any, hdr ...string) res {
	e.t.Helper()
	return e.do("POST", e.bridge+"/v1/bridge/workflow-runs", tok, body, hdr...)
}

// waitRun polls a workflow run until it has status (20 s at most).
func (e *daemonEnv) waitRun(tok, id, status string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		run := e.must(200, e.do("GET", e.bridge+"/v1/bridge/workflow-runs/"+id, tok, nil))
		if run["status"] == status {
			return run
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("workflow run %s is %v, want %s: %v", id, run["status"], status, run)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func listIDs(t *testing.T, r res) []string {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	var ids []string
	for _, run := range r.json(t)["workflowRuns"].([]any) {
		ids = append(ids, run.(map[string]any)["id"].(string))
	}
	return ids
}

func TestBridgeWorkflowRuns(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newDaemonEnv(t)
	e.publish(greetingWorkflow, true)
	e.publish(idleWorkflow, false)
	app := e.token("app", "read,workflows")
	other := e.token("other", "read,workflows")
	reader := e.token("reader", "read,submit,control")
	runs := func() string { return e.bridge + "/v1/bridge/workflow-runs" } // the port changes on restart

	// A run starts through the active activation and is read from the
	// platform until it has ended.
	r := e.startRun(app, map[string]any{"templateId": "acme/greeting", "inputs": map[string]string{"name": "Ada", "title": "Dr"}})
	started := e.must(202, r)
	id := started["id"].(string)
	is.Equal(r.header.Get("Location"), "/v1/bridge/workflow-runs/"+id)
	is.Equal(r.header.Get("Idempotent-Replayed"), "")
	is.Equal(started["client"], "app")
	is.Equal(started["templateId"], "acme/greeting")
	is.Equal(started["workflow"], "acme/greeting@1")
	is.Equal(started["inputs"], map[string]any{"name": "Ada", "title": "Dr"})
	run := e.waitRun(app, id, "succeeded")
	is.Equal(run["output"], map[string]any{"greeting": "hello Dr Ada"})
	is.Equal(run["error"], nil)
	platformRun := run["platformRunId"].(string)
	is.True(platformRun != id)
	link := run["links"].(map[string]any)["platformRun"].(string)
	is.Equal(link, "/api/v1/tenants/"+e.ws.TenantID+"/projects/"+e.ws.ProjectID+"/environments/"+e.ws.EnvironmentID+"/runs/"+platformRun)
	// The platform holds the same run, created by the local operator.
	pr := e.must(200, e.do("GET", e.services+link, e.operator(), nil))
	is.Equal(pr["status"], "succeeded")
	is.Equal(pr["created_by"], e.ws.OperatorID)
	is.Equal(pr["state"].(map[string]any)["output"], map[string]any{"greeting": "hello Dr Ada"})

	// A run that fails reports the platform's error.
	failed := e.must(202, e.startRun(app, map[string]any{"templateId": "acme/greeting@1", "inputs": map[string]string{"name": "nobody"}}))
	run = e.waitRun(app, failed["id"].(string), "failed")
	is.Equal(run["error"], map[string]any{"code": "NO_NAME", "message": "nobody has no name"})
	is.Equal(run["output"], nil)

	// Refusals.
	for _, c := range []struct {
		name string
		body string
		hdr  []string
		want int
		code string
	}{
		{"inputs against the schema", `{"templateId":"acme/greeting","inputs":{}}`, nil, 422, "invalid_inputs"},
		{"non-string input", `{"templateId":"acme/greeting","inputs":{"name":1}}`, nil, 400, "invalid_request"},
		{"missing inputs", `{"templateId":"acme/greeting"}`, nil, 400, "invalid_request"},
		{"missing templateId", `{"inputs":{"name":"x"}}`, nil, 400, "invalid_request"},
		{"extra property", `{"templateId":"acme/greeting","inputs":{"name":"x"},"wait":"yes"}`, nil, 400, "invalid_request"},
		{"empty templateId", `{"templateId":"","inputs":{"name":"x"}}`, nil, 400, "invalid_request"},
		{"unknown template", `{"templateId":"acme/none","inputs":{}}`, nil, 422, "unknown_template"},
		{"unpublished version", `{"templateId":"acme/greeting@2","inputs":{"name":"x"}}`, nil, 422, "unknown_template"},
		{"never activated", `{"templateId":"acme/idle","inputs":{}}`, nil, 422, "template_not_active"},
		{"Idempotency-Key over 128", `{"templateId":"acme/greeting","inputs":{"name":"x"}}`, []string{"Idempotency-Key", strings.Repeat("k", 129)}, 400, "invalid_parameter"},
	} {
		r := e.startRun(app, c.body, c.hdr...)
		if r.status != c.want || r.code() != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.body, c.want, c.code)
		}
	}
	r = e.startRun(app, `{"templateId":"acme/greeting","inputs":{}}`)
	is.True(strings.Contains(string(r.body), "input schema"))                      // the platform's complaint
	r = e.startRun(reader, `{"templateId":"acme/greeting","inputs":{"name":"x"}}`) // no workflows scope
	is.Equal(r.status, 403)
	is.Equal(r.code(), "insufficient_scope")

	// Idempotency-Key: the same body (as JSON) is the same run, another
	// body a conflict; keys are per client.
	body := `{"templateId":"acme/greeting","inputs":{"name":"Grace","title":"Rear Admiral"}}`
	first := e.must(202, e.startRun(app, body, "Idempotency-Key", "k-1"))
	same := `{ "inputs" : {"title":"Rear Admiral", "name":"Grace"}, "templateId":"acme/greeting" }`
	r = e.startRun(app, same, "Idempotency-Key", "k-1")
	is.Equal(e.must(202, r)["id"], first["id"])
	is.Equal(r.header.Get("Idempotent-Replayed"), "true")
	r = e.startRun(app, `{"templateId":"acme/greeting","inputs":{"name":"Hopper"}}`, "Idempotency-Key", "k-1")
	is.Equal(r.status, 409)
	is.Equal(r.code(), "idempotency_conflict")
	theirs := e.must(202, e.startRun(other, body, "Idempotency-Key", "k-1"))
	is.True(theirs["id"] != first["id"])
	is.True(theirs["platformRunId"] != first["platformRunId"])
	e.waitRun(app, first["id"].(string), "succeeded")

	// Isolation: a client sees only the runs it started; the owner sees all.
	is.Equal(e.do("GET", runs()+"/"+id, other, nil).status, 404)
	is.Equal(e.do("GET", runs()+"/"+id, reader, nil).code(), "not_found")
	is.Equal(listIDs(t, e.do("GET", runs(), other, nil)), []string{theirs["id"].(string)})
	mine := listIDs(t, e.do("GET", runs(), app, nil))
	is.Equal(mine, []string{first["id"].(string), failed["id"].(string), id}) // newest first
	is.Equal(len(listIDs(t, e.do("GET", runs(), e.owner, nil))), 4)
	is.Equal(e.do("GET", runs()+"/"+theirs["id"].(string), e.owner, nil).status, 200)

	// The record survives a restart: reads, the list and the key.
	before := e.must(200, e.do("GET", runs()+"/"+id, app, nil))
	e.restart()
	after := e.must(200, e.do("GET", runs()+"/"+id, app, nil))
	is.Equal(after, before)
	is.Equal(listIDs(t, e.do("GET", runs(), app, nil)), mine)
	r = e.startRun(app, body, "Idempotency-Key", "k-1")
	is.Equal(e.must(202, r)["id"], first["id"])
	is.Equal(e.startRun(app, `{"templateId":"acme/greeting","inputs":{"name":"Hopper"}}`, "Idempotency-Key", "k-1").status, 409)
}

// TestBridgeWorkflowAgentSteps runs a workflow of two agent steps to its
// end through bridge jobs of the fake agent: the first answers a JSON
// object for its output schema, the second text.
func TestBridgeWorkflowAgentSteps(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newDaemonEnv(t)
	e.publish(triageWorkflow, true)
	app := e.token("app", "read,workflows")

	started := e.must(202, e.startRun(app, map[string]any{"templateId": "acme/triage", "inputs": map[string]string{"ticket": `{"category": "bug"}`}}))
	run := e.waitRun(app, started["id"].(string), "succeeded")
	is.Equal(run["output"], map[string]any{"category": "bug", "summary": "Summary: bug"})

	// Each step was a job of the internal client "platform", visible to it
	// and to the owner only.
	jobs := e.must(200, e.do("GET", e.bridge+"/v1/bridge/jobs", e.token("platform", "read"), nil))["jobs"].([]any)
	is.Equal(len(jobs), 2)
	for _, j := range jobs {
		job := j.(map[string]any)
		is.Equal(job["client"], "platform")
		is.Equal(job["source"], "workflow")
		is.Equal(job["profile"], "claude")
		is.Equal(job["state"], "succeeded")
		is.Equal(job["metadata"].(map[string]any)["workflowRunId"], run["platformRunId"])
	}
	is.True(strings.HasPrefix(jobs[0].(map[string]any)["prompt"].(string), "Instructions:\nYou triage support tickets."))
	is.Equal(jobs[1].(map[string]any)["prompt"], "Summary: bug")
	is.Equal(len(e.must(200, e.do("GET", e.bridge+"/v1/bridge/jobs", app, nil))["jobs"].([]any)), 0)

	// An answer outside the step's schema fails the step (one attempt: an
	// incident); the run waits for an operator.
	started = e.must(202, e.startRun(app, map[string]any{"templateId": "acme/triage", "inputs": map[string]string{"ticket": `{"category": "weather"}`}}))
	run = e.waitRun(app, started["id"].(string), "suspended")
	is.Equal(run["output"], nil)
}

// TestBridgeStartsTheExampleWorkflow: the bridge's workflow-runs endpoint
// starts the language reference's complete example (examples/fulfil-order)
// from string inputs: typed properties (the order lines, an array) are
// given as JSON text and parsed by the input schema.
func TestBridgeStartsTheExampleWorkflow(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newDaemonEnv(t)
	files, err := filepath.Glob(filepath.Join("..", "examples", "fulfil-order", "*.yaml"))
	is.NoErr(err)
	sort.Strings(files)
	op := e.operator()
	collections := map[string]string{"action": "actions", "workflow": "workflows", "decisionTable": "decision-tables"}
	var version string
	for _, f := range files {
		src, err := os.ReadFile(f)
		is.NoErr(err)
		kind := ""
		for line := range strings.Lines(string(src)) {
			if k, ok := strings.CutPrefix(strings.TrimSpace(line), "kind: "); ok {
				kind = k
				break
			}
		}
		version = e.must(201, e.do("POST", e.projectURL()+"/"+collections[kind], op, map[string]string{"source": string(src), "format": "yaml"},
			"Idempotency-Key", "example-"+filepath.Base(f)))["id"].(string)
	}
	e.must(201, e.do("POST", e.projectURL()+"/environments/"+e.ws.EnvironmentID+"/activations", op,
		map[string]string{"published_version_id": version}, "Idempotency-Key", "activate-example"))

	app := e.token("shop", "read,workflows")
	inputs := map[string]string{"orderId": "A-1002", "customerId": "c-7", "email": "bo@example.com", "currency": "EUR",
		"cardToken": "tok_visa", "lines": `[{"sku":"book","qty":1,"price":12.5}]`}
	started := e.must(202, e.startRun(app, map[string]any{"templateId": "acme/fulfil-order", "inputs": inputs}))
	is.Equal(started["workflow"], "acme/fulfil-order@4")
	// The run reaches the approval step: it waits for a person.
	run := e.waitRun(app, started["id"].(string), "waiting")
	in := run["inputs"].(map[string]any)
	is.Equal(in["lines"].([]any)[0].(map[string]any)["qty"], float64(1))
	is.Equal(in["cardToken"], "[redacted]")
	// Text that is not JSON for a typed property is refused by the schema.
	inputs["lines"] = "two books"
	r := e.startRun(app, map[string]any{"templateId": "acme/fulfil-order", "inputs": inputs})
	is.Equal(r.status, 422)
	is.Equal(r.code(), "invalid_inputs")
}
