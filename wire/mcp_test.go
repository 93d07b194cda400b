package wire_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	bridgemcp "github.com/agentbridge/bridge/bridge/mcp"
)

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPWorkflowRuns starts and reads a workflow run through the MCP
// endpoint of the bridge listener, with the workflows scope; another
// client cannot read it.
func TestMCPWorkflowRuns(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newDaemonEnv(t)
	e.publish(greetingWorkflow, true)
	ctx := context.Background()
	connect := func(tok string) *sdk.ClientSession {
		c := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: e.bridge + bridgemcp.Path, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{tok}}}, nil)
		is.NoErr(err)
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *sdk.ClientSession, name string, args map[string]any) (map[string]any, string) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		is.NoErr(err)
		if res.IsError {
			return nil, res.Content[0].(*sdk.TextContent).Text
		}
		data, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		is.NoErr(json.Unmarshal(data, &m))
		return m, ""
	}
	app := connect(e.token("app", "read,workflows"))
	run, errText := call(app, "start_workflow_run", map[string]any{"templateId": "acme/greeting", "inputs": map[string]string{"name": "Ada", "title": "Dr"}, "idempotencyKey": "k1"})
	is.Equal(errText, "")
	is.Equal(run["client"], "app")
	is.Equal(run["workflow"], "acme/greeting@1")
	id := run["id"].(string)
	deadline := time.Now().Add(20 * time.Second)
	for run["status"] != "succeeded" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		run, errText = call(app, "get_workflow_run", map[string]any{"runId": id})
		is.Equal(errText, "")
	}
	is.Equal(run["output"], map[string]any{"greeting": "hello Dr Ada"})
	// The same key and request answer the same run.
	again, _ := call(app, "start_workflow_run", map[string]any{"templateId": "acme/greeting", "inputs": map[string]string{"name": "Ada", "title": "Dr"}, "idempotencyKey": "k1"})
	is.Equal(again["id"], id)
	_, errText = call(app, "start_workflow_run", map[string]any{"templateId": "acme/none", "inputs": map[string]string{}})
	is.True(strings.Contains(errText, "unknown_template"))

	other := connect(e.token("other", "read,workflows"))
	_, errText = call(other, "get_workflow_run", map[string]any{"runId": id})
	is.True(strings.Contains(errText, "not_found"))
	noScope := connect(e.token("reader", "read,submit"))
	_, errText = call(noScope, "start_workflow_run", map[string]any{"templateId": "acme/greeting", "inputs": map[string]string{"name": "Ada"}})
	is.True(strings.Contains(errText, "insufficient_scope"))
}
