package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	bridgemcp "github.com/agentbridge/bridge/bridge/mcp"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/wire"
)

func TestMain(m *testing.M) {
	os.Setenv("BRIDGE_DISABLE_KEYRING", "1")
	os.Exit(m.Run())
}

// env is a daemon (without the workflow platform) whose default profile
// is the echo demo: jobs answer their prompt at once; the slow profile's
// jobs run until cancelled.
type env struct {
	t          *testing.T
	url, owner string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	file, err := config.Parse("config.yaml", []byte("bridge:\n  profiles:\n    default: {provider: echo}\n    slow: {provider: command, command: sleep, args: [\"30\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	file.LookupEnv = func(string) (string, bool) { return "", false }
	cfg := daemon.DefaultConfig()
	cfg.Listen.BridgePort, cfg.Listen.ServicesPort = 0, 0
	d, err := daemon.Start(context.Background(), wire.OptionsWith(daemon.Options{DataDir: dir, Config: cfg, File: file,
		Build: daemon.BuildInfo{Version: "test"}, DisableKeyring: true}, wire.BridgeOptions{WithoutPlatform: true}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Shutdown() })
	e := &env{t: t, url: d.State().BridgeURL}
	if e.owner, err = daemon.ReadOwnerToken(filepath.Join(dir, daemon.OwnerTokenFile)); err != nil {
		t.Fatal(err)
	}
	return e
}

// do sends a bridge API request and answers status and body.
func (e *env) do(method, path, tok string, body any, hdr ...string) (int, []byte, http.Header) {
	e.t.Helper()
	var rd io.Reader
	if s, ok := body.(string); ok {
		rd = strings.NewReader(s)
	} else if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data, res.Header
}

func (e *env) token(client, scopes string) string {
	e.t.Helper()
	status, body, _ := e.do("POST", "/v1/bridge/admin/tokens", e.owner, map[string]any{"id": client, "scopes": strings.Split(scopes, ","), "profiles": []string{"*"}})
	if status != 201 {
		e.t.Fatalf("mint token: %d %s", status, body)
	}
	var out struct{ Token string }
	_ = json.Unmarshal(body, &out)
	return out.Token
}

// progress collects the progress notifications a client receives.
type progress struct {
	mu   sync.Mutex
	msgs []string
}

func (p *progress) add(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.msgs = append(p.msgs, req.Params.Message)
	p.mu.Unlock()
}

func (p *progress) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.msgs)
}

type bearerTransport struct{ tok string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens a client session to the bridge's MCP server with tok,
// over streamable HTTP on the bridge listener or over an in-memory
// transport pair (the stdio server's code path; cli tests run the real
// stdio binary).
func (e *env) connect(transport, tok string, p *progress) *sdk.ClientSession {
	e.t.Helper()
	ctx := context.Background()
	opts := &sdk.ClientOptions{}
	if p != nil {
		opts.ProgressNotificationHandler = p.add
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, opts)
	var ct sdk.Transport
	switch transport {
	case "http":
		ct = &sdk.StreamableClientTransport{Endpoint: e.url + bridgemcp.Path, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearerTransport{tok}}}
	default:
		server := bridgemcp.New(&bridgemcp.API{Base: e.url, Token: tok}, bridgemcp.Options{Version: "test", Poll: 20 * time.Millisecond,
			Addresses: func(context.Context) bridgemcp.Addresses {
				return bridgemcp.Addresses{BridgeURL: e.url, ConfiguredBridgePort: daemon.DefaultBridgePort}
			}, Health: func(context.Context) error { return nil }})
		st, cct := sdk.NewInMemoryTransports()
		ss, err := server.Connect(ctx, st, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { ss.Close() })
		ct = cct
	}
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		e.t.Fatalf("connect over %s: %v", transport, err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool; it answers the structured output, or the error text
// of a tool error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (map[string]any, string) {
	t.Helper()
	return callP(t, cs, name, args, nil)
}

func callP(t *testing.T, cs *sdk.ClientSession, name string, args any, progressToken any) (map[string]any, string) {
	t.Helper()
	params := &sdk.CallToolParams{Name: name, Arguments: args}
	if progressToken != nil {
		params.SetProgressToken(progressToken)
	}
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		return nil, "protocol: " + err.Error()
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return nil, b.String()
	}
	data, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, data, err)
	}
	return out, ""
}

// mustCall calls a tool that must succeed.
func mustCall(t *testing.T, cs *sdk.ClientSession, name string, args any) map[string]any {
	t.Helper()
	out, errText := call(t, cs, name, args)
	if errText != "" {
		t.Fatalf("%s(%v): %s", name, args, errText)
	}
	return out
}

var allTools = []string{"bridge_status", "cancel_job", "get_job", "get_workflow_run", "job_result", "list_jobs", "send_message", "start_workflow_run", "submit_job"}

// TestHostTools lists and calls every tool over streamable HTTP and over
// the in-process transport of `bridge mcp`.
func TestHostTools(t *testing.T) {
	e := newEnv(t)
	tokA := e.token("app-a", "read,submit,control")
	for _, transport := range []string{"http", "memory"} {
		t.Run(transport, func(t *testing.T) {
			is := is.New(t)
			var prog progress
			cs := e.connect(transport, tokA, &prog)
			ctx := context.Background()

			tools, err := cs.ListTools(ctx, nil)
			is.NoErr(err)
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
				is.True(tool.InputSchema != nil)  // typed input
				is.True(tool.OutputSchema != nil) // typed output
				is.True(tool.Description != "")
			}
			slices.Sort(names)
			is.Equal(names, allTools)

			st := mustCall(t, cs, "bridge_status", map[string]any{})
			is.Equal(st["version"], "test")
			is.Equal(st["bridgeUrl"], e.url) // the actual address
			is.Equal(st["client"], "app-a")
			is.Equal(st["health"], "ready")
			is.True(len(st["providers"].([]any)) >= 1)
			is.Equal(st["providers"].([]any)[0].(map[string]any)["provider"], "echo")
			if transport == "memory" {
				is.Equal(st["configuredBridgePort"], 8766.0)
				is.Equal(st["portDiffers"], true) // the test daemon picked a free port
			}

			job := mustCall(t, cs, "submit_job", map[string]any{"prompt": "hello from " + transport, "metadata": map[string]string{"k": "v"}})
			id := job["id"].(string)
			is.Equal(job["client"], "app-a")
			is.Equal(job["metadata"], map[string]any{"k": "v"})
			res := mustCall(t, cs, "job_result", map[string]any{"jobId": id, "timeoutSeconds": 20})
			is.Equal(res["done"], true)
			is.Equal(res["state"], "succeeded")
			is.True(strings.Contains(res["result"].(string), "hello from "+transport))
			is.Equal(res["demo"], true)

			got := mustCall(t, cs, "get_job", map[string]any{"jobId": id})
			is.Equal(got["state"], "succeeded")
			list := mustCall(t, cs, "list_jobs", map[string]any{"limit": 200, "order": "desc"})
			is.Equal(list["jobs"].([]any)[0].(map[string]any)["id"], id)

			msg := mustCall(t, cs, "send_message", map[string]any{"jobId": id, "text": "and again"})
			is.Equal(msg["message"].(map[string]any)["text"], "and again")
			is.Equal(msg["job"].(map[string]any)["id"], id)
			res = mustCall(t, cs, "job_result", map[string]any{"jobId": id, "timeoutSeconds": 20})
			is.Equal(res["state"], "succeeded")

			// A job that runs on: job_result times out with done=false and
			// reports progress while it waits.
			held := mustCall(t, cs, "submit_job", map[string]any{"prompt": "hold", "profile": "slow"})["id"].(string)
			res = mustCall(t, cs, "job_result", map[string]any{"jobId": held, "timeoutSeconds": 0})
			is.Equal(res["done"], false)
			res, _ = callP(t, cs, "job_result", map[string]any{"jobId": held, "timeoutSeconds": 1}, "wait-1")
			is.Equal(res["done"], false)
			is.True(res["state"] == "running" || res["state"] == "queued")
			waitFor(t, func() bool { return prog.count() >= 1 })
			prog.mu.Lock()
			is.True(strings.Contains(prog.msgs[0], held))
			prog.mu.Unlock()
			cancelled := mustCall(t, cs, "cancel_job", map[string]any{"jobId": held})
			is.Equal(cancelled["state"], "cancelled")

			// Resources: the transcript and the audit log.
			tmpl, err := cs.ListResourceTemplates(ctx, nil)
			is.NoErr(err)
			is.Equal(len(tmpl.ResourceTemplates), 2)
			rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "bridge://jobs/" + id + "/transcript"})
			is.NoErr(err)
			is.True(strings.Contains(rr.Contents[0].Text, "hello from "+transport))
			is.True(strings.Contains(rr.Contents[0].Text, "and again"))
			rr, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "bridge://jobs/" + id + "/audit"})
			is.NoErr(err)
			var audit struct {
				Entries []map[string]any `json:"entries"`
			}
			is.NoErr(json.Unmarshal([]byte(rr.Contents[0].Text), &audit))
			is.True(len(audit.Entries) >= 4)
			_, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "bridge://jobs/" + id + "/secrets"})
			is.True(err != nil)
		})
	}
}

// TestHostToolRefusals: isolation between clients, scopes, revocation
// and bad input on both sides of every bound.
func TestHostToolRefusals(t *testing.T) {
	e := newEnv(t)
	tokA := e.token("app-a", "read,submit,control")
	for _, transport := range []string{"http", "memory"} {
		t.Run(transport, func(t *testing.T) {
			is := is.New(t)
			a := e.connect(transport, tokA, nil)
			b := e.connect(transport, e.token("app-b-"+transport, "read,submit,control,workflows"), nil)
			reader := e.connect(transport, e.token("reader-"+transport, "read"), nil)
			id := mustCall(t, a, "submit_job", map[string]any{"prompt": "mine"})["id"].(string)

			// Client B cannot see A's job, nor its resources.
			_, errText := call(t, b, "get_job", map[string]any{"jobId": id})
			is.True(strings.Contains(errText, "not_found"))
			_, errText = call(t, b, "job_result", map[string]any{"jobId": id, "timeoutSeconds": 0})
			is.True(strings.Contains(errText, "not_found"))
			_, errText = call(t, b, "cancel_job", map[string]any{"jobId": id})
			is.True(strings.Contains(errText, "not_found"))
			_, errText = call(t, b, "send_message", map[string]any{"jobId": id, "text": "hi"})
			is.True(strings.Contains(errText, "not_found"))
			for _, j := range mustCall(t, b, "list_jobs", map[string]any{})["jobs"].([]any) {
				is.True(j.(map[string]any)["id"] != id)
			}
			_, err := b.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "bridge://jobs/" + id + "/transcript"})
			is.True(err != nil)

			// Scopes: a read-only token cannot submit, message or cancel; a
			// token without workflows cannot start runs.
			_, errText = call(t, reader, "submit_job", map[string]any{"prompt": "x"})
			is.True(strings.Contains(errText, "insufficient_scope"))
			_, errText = call(t, reader, "cancel_job", map[string]any{"jobId": id})
			is.True(strings.Contains(errText, "insufficient_scope"))
			_, errText = call(t, a, "start_workflow_run", map[string]any{"templateId": "acme/flow", "inputs": map[string]string{}})
			is.True(strings.Contains(errText, "insufficient_scope"))
			// With the scope the request reaches the platform, absent here.
			_, errText = call(t, b, "start_workflow_run", map[string]any{"templateId": "acme/flow", "inputs": map[string]string{}})
			is.True(strings.Contains(errText, "workflows_unavailable"))
			_, errText = call(t, b, "get_workflow_run", map[string]any{"runId": "0b8e2a1c-8d2c-4c35-9d53-1c1f0f2f7a10"})
			is.True(strings.Contains(errText, "workflows_unavailable"))

			// Bad input is refused by the schemas before any request, on
			// both sides of each bound.
			long := strings.Repeat("x", 100_000)
			for _, c := range []struct {
				tool string
				args map[string]any
				ok   bool
			}{
				{"submit_job", map[string]any{"prompt": ""}, false},
				{"submit_job", map[string]any{"prompt": long}, true},
				{"submit_job", map[string]any{"prompt": long + "x"}, false},
				{"submit_job", map[string]any{}, false},
				{"submit_job", map[string]any{"prompt": "x", "extra": 1}, false},
				{"submit_job", map[string]any{"prompt": "x", "idempotencyKey": strings.Repeat("k", 128)}, true},
				{"submit_job", map[string]any{"prompt": "x", "idempotencyKey": strings.Repeat("k", 129)}, false},
				{"get_job", map[string]any{"jobId": "not-a-uuid"}, false},
				{"get_job", map[string]any{"jobId": "../status"}, false},
				{"job_result", map[string]any{"jobId": id, "timeoutSeconds": -1}, false},
				{"job_result", map[string]any{"jobId": id, "timeoutSeconds": 0}, true},
				{"job_result", map[string]any{"jobId": id, "timeoutSeconds": 601}, false},
				{"list_jobs", map[string]any{"limit": 0}, false},
				{"list_jobs", map[string]any{"limit": -1}, false},
				{"list_jobs", map[string]any{"limit": 1}, true},
				{"list_jobs", map[string]any{"limit": 200}, true},
				{"list_jobs", map[string]any{"limit": 201}, false},
				{"list_jobs", map[string]any{"order": "sideways"}, false},
				{"list_jobs", map[string]any{"after": "forged"}, false},
				{"send_message", map[string]any{"jobId": id, "text": ""}, false},
				{"send_message", map[string]any{"jobId": id, "text": long + "x"}, false},
			} {
				_, errText := call(t, a, c.tool, c.args)
				if (errText == "") != c.ok {
					t.Errorf("%s %.80v: error %q, want ok=%v", c.tool, c.args, errText, c.ok)
				}
			}

			// A revoked client is refused at once.
			rev := e.token("revoked-"+transport, "read,submit")
			rc := e.connect(transport, rev, nil)
			mustCall(t, rc, "list_jobs", map[string]any{})
			status, body, _ := e.do("DELETE", "/v1/bridge/admin/clients/revoked-"+transport, e.owner, nil)
			is.Equal(status, 200)
			_, errText = call(t, rc, "list_jobs", map[string]any{})
			is.True(errText != "")
			if transport == "memory" {
				is.True(strings.Contains(errText, "unauthorized")) // the daemon's refusal, worded for the host
			}
			_ = body
		})
	}
}

// TestHTTPEndpointGuards: the mount answers only authenticated requests
// with an allowed Host and Origin, and a session answers only its token.
func TestHTTPEndpointGuards(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	tokA, tokB := e.token("app-a", "read"), e.token("app-b", "read")
	submitOnly := e.token("submitter", "submit")
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

	status, body, _ := e.do("POST", bridgemcp.Path, "", initBody)
	is.Equal(status, 401)
	is.True(strings.Contains(string(body), `"code":"unauthorized"`)) // the bridge's error shape
	status, _, _ = e.do("POST", bridgemcp.Path, "brg_notatoken", initBody)
	is.Equal(status, 401)
	status, body, _ = e.do("POST", bridgemcp.Path, submitOnly, initBody)
	is.Equal(status, 403)
	is.True(strings.Contains(string(body), "insufficient_scope"))
	status, _, _ = e.do("POST", bridgemcp.Path, tokA, initBody, "Origin", "https://evil.example")
	is.Equal(status, 403)
	status, _, _ = e.do("POST", bridgemcp.Path+"?token="+tokA, "", initBody)
	is.Equal(status, 401)

	status, _, hdr := e.do("POST", bridgemcp.Path, tokA, initBody)
	is.Equal(status, 200)
	session := hdr.Get("Mcp-Session-Id")
	is.True(session != "")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	// Another client's token cannot use A's session.
	status, _, _ = e.do("POST", bridgemcp.Path, tokB, list, "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18")
	is.Equal(status, 403)
	status, body, _ = e.do("POST", bridgemcp.Path, tokA, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18")
	is.True(status == 202 || status == 200)
	status, body, _ = e.do("POST", bridgemcp.Path, tokA, list, "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18")
	is.Equal(status, 200)
	is.True(strings.Contains(string(body), "submit_job"))
	// A body beyond the bridge's limit is refused.
	status, _, _ = e.do("POST", bridgemcp.Path, tokA, fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"pad":%q}}`, strings.Repeat("p", 3<<20)),
		"Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18")
	is.True(status >= 400)
	// DELETE ends the session.
	status, _, _ = e.do("DELETE", bridgemcp.Path, tokA, nil, "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18")
	is.True(status == 200 || status == 204)
	status, _, _ = e.do("POST", bridgemcp.Path, tokA, list, "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18")
	is.Equal(status, 404)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
