package bridge_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/bridge"
	"github.com/agentbridge/bridge/bridge/provider/providertest"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/wire"
)

// TestWorkflowRunRequestContract checks the body, header, query and scope
// rules of the workflow-run routes against a daemon whose local project
// has nothing published (the end-to-end runs are in package wire).
func TestWorkflowRunRequestContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,workflows")
	long := strings.Repeat("k", 129)
	cases := []struct {
		name string
		body any
		hdr  []string
		path string
		want int
		code string
	}{
		{"unknown template", `{"templateId":"acme/none","inputs":{}}`, nil, "", 422, "unknown_template"},
		{"unknown version", `{"templateId":"acme/none@2","inputs":{"a":"b"}}`, nil, "", 422, "unknown_template"},
		{"malformed version", `{"templateId":"acme/none@x","inputs":{}}`, nil, "", 422, "unknown_template"},
		{"key of 128", `{"templateId":"acme/none","inputs":{}}`, []string{"Idempotency-Key", long[:128]}, "", 422, "unknown_template"},
		{"key of 129", `{"templateId":"acme/none","inputs":{}}`, []string{"Idempotency-Key", long}, "", 400, "invalid_parameter"},
		{"missing templateId", `{"inputs":{}}`, nil, "", 400, "invalid_request"},
		{"empty templateId", `{"templateId":"","inputs":{}}`, nil, "", 400, "invalid_request"},
		{"numeric templateId", `{"templateId":7,"inputs":{}}`, nil, "", 400, "invalid_request"},
		{"missing inputs", `{"templateId":"acme/flow"}`, nil, "", 400, "invalid_request"},
		{"null inputs", `{"templateId":"acme/flow","inputs":null}`, nil, "", 400, "invalid_request"},
		{"array inputs", `{"templateId":"acme/flow","inputs":["a"]}`, nil, "", 400, "invalid_request"},
		{"number input", `{"templateId":"acme/flow","inputs":{"n":1}}`, nil, "", 400, "invalid_request"},
		{"bool input", `{"templateId":"acme/flow","inputs":{"n":true}}`, nil, "", 400, "invalid_request"},
		{"null input", `{"templateId":"acme/flow","inputs":{"n":null}}`, nil, "", 400, "invalid_request"},
		{"object input", `{"templateId":"acme/flow","inputs":{"n":{"x":"y"}}}`, nil, "", 400, "invalid_request"},
		{"extra property", `{"templateId":"acme/flow","inputs":{},"priority":"high"}`, nil, "", 400, "invalid_request"},
		{"array body", `[]`, nil, "", 400, "invalid_request"},
		{"empty body", ``, nil, "", 400, "invalid_request"},
		{"query", `{"templateId":"acme/flow","inputs":{}}`, nil, "?wait=true", 400, "invalid_parameter"},
		{"not JSON", `{"templateId":"acme/flow","inputs":{}}`, []string{"Content-Type", "text/plain"}, "", 415, "unsupported_media"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("POST", "/v1/bridge/workflow-runs"+c.path, tok, c.body, c.hdr...)
			if r.Status != c.want || r.code() != c.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, c.want, c.code)
			}
		})
	}
	// The messages say what to fix.
	r := e.do("POST", "/v1/bridge/workflow-runs", tok, `{"templateId":"acme/flow","inputs":{"n":1}}`)
	is.True(strings.Contains(string(r.Body), "inputs.n must be a string"))
	r = e.do("POST", "/v1/bridge/workflow-runs", tok, `{"templateId":"acme/none","inputs":{}}`)
	is.True(strings.Contains(string(r.Body), "acme/none"))

	// Scopes: starting needs workflows, reading needs read.
	submitter := e.token("app", "read,submit,control")
	r = e.do("POST", "/v1/bridge/workflow-runs", submitter, `{"templateId":"acme/flow","inputs":{}}`)
	is.Equal(r.Status, 403)
	is.Equal(r.code(), "insufficient_scope")
	starter := e.token("starter", "workflows")
	is.Equal(e.do("GET", "/v1/bridge/workflow-runs", starter, nil).Status, 403)
	is.Equal(e.do("GET", "/v1/bridge/workflow-runs/"+uuid.NewString(), starter, nil).Status, 403)
	is.Equal(e.do("GET", "/v1/bridge/workflow-runs", "", nil).Status, 401)

	// Reads.
	list := e.do("GET", "/v1/bridge/workflow-runs", tok, nil)
	is.Equal(list.Status, 200)
	is.Equal(string(list.Body), `{"hasMore":false,"workflowRuns":[]}`+"\n")
	is.Equal(e.do("GET", "/v1/bridge/workflow-runs?limit=5", tok, nil).code(), "invalid_parameter")
	is.Equal(e.do("GET", "/v1/bridge/workflow-runs/not-a-uuid", tok, nil).code(), "invalid_parameter")
	is.Equal(e.do("GET", "/v1/bridge/workflow-runs/"+uuid.NewString()+"0", tok, nil).code(), "invalid_parameter")
	is.Equal(e.do("GET", "/v1/bridge/workflow-runs/"+strings.ToUpper(uuid.NewString()), tok, nil).code(), "not_found")
	r = e.do("GET", "/v1/bridge/workflow-runs/"+uuid.NewString(), tok, nil)
	is.Equal(r.Status, 404)
	is.Equal(r.code(), "not_found")
}

// startBridgeOnly starts e's daemon on e.dir with the bridge and without
// the platform, and answers the bridge service.
func startBridgeOnly(e *env) *bridge.Service {
	e.t.Helper()
	file, err := config.Parse("config.yaml", []byte(e.yaml))
	if err != nil {
		e.t.Fatal(err)
	}
	file.LookupEnv = func(string) (string, bool) { return "", false }
	cfg := daemon.DefaultConfig()
	cfg.Listen.BridgePort, cfg.Listen.ServicesPort = 0, 0
	var svc *bridge.Service
	opts := wire.OptionsWith(daemon.Options{DataDir: e.dir, Config: cfg, File: file, DisableKeyring: true},
		wire.BridgeOptions{WithoutPlatform: true, Built: func(s *bridge.Service) { svc = s }})
	if e.d, err = daemon.Start(context.Background(), opts); err != nil {
		e.t.Fatal(err)
	}
	d := e.d
	e.t.Cleanup(func() { d.Shutdown() })
	e.url = d.State().BridgeURL
	if e.owner, err = daemon.ReadOwnerToken(filepath.Join(e.dir, daemon.OwnerTokenFile)); err != nil {
		e.t.Fatal(err)
	}
	return svc
}

// newBridgeOnly is a daemon without the platform whose profiles default
// (echo) and claude (the fake agent) run agent steps.
func newBridgeOnly(t *testing.T, extra string) (*env, *bridge.Service) {
	e := &env{t: t, dir: t.TempDir()}
	e.claude, e.codex = providertest.BuildFakeAgent(t, t.TempDir())
	e.yaml = fmt.Sprintf("bridge:\n  inactivity-timeout: 5s\n%s  profiles:\n    default: {provider: echo}\n    fake: {provider: claude, command: %q}\n", extra, e.claude)
	return e, startBridgeOnly(e)
}

func TestWorkflowRunsWithoutPlatform(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e, _ := newBridgeOnly(t, "")
	tok := e.token("ide", "read,workflows")
	r := e.do("POST", "/v1/bridge/workflow-runs", tok, `{"templateId":"acme/flow","inputs":{}}`)
	is.Equal(r.Status, 503)
	is.Equal(r.code(), "workflows_unavailable")
	is.Equal(e.do("GET", "/v1/bridge/workflow-runs", tok, nil).Status, 503)
	is.Equal(e.do("GET", "/v1/bridge/workflow-runs/"+uuid.NewString(), tok, nil).Status, 503)
	// The request is still checked first.
	is.Equal(e.do("POST", "/v1/bridge/workflow-runs", tok, `{"templateId":"acme/flow"}`).Status, 400)
	// The routes are documented.
	paths := e.do("GET", "/v1/bridge/openapi.json", tok, nil).json(t)["paths"].(map[string]any)
	is.True(paths["/v1/bridge/workflow-runs"].(map[string]any)["post"] != nil)
	is.True(paths["/v1/bridge/workflow-runs/{id}"].(map[string]any)["get"] != nil)
}
