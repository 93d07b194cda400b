package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbridge/bridge/daemon"
)

// mcpCommand is `bridge mcp` as a real child process speaking stdio.
func mcpCommand(dir string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "mcp", "--data-dir", dir, "--log-level", "error")
	cmd.Env = append(os.Environ(), append([]string{"BRIDGE_TEST_RUN_CLI=1", "BRIDGE_TOKEN="}, env...)...)
	return cmd
}

func TestMCPOverStdio(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(dir, daemon.ConfigFile), []byte("bridge:\n  profiles:\n    default: {provider: echo}\n"), 0o600))
	st, stop := serveInProcess(t, dir)
	defer stop()

	// No token anywhere: a usage error that says how to get one.
	out, err := mcpCommand(dir).CombinedOutput()
	is.True(err != nil)
	is.Equal(err.(*exec.ExitError).ExitCode(), ExitUsage)
	is.True(strings.Contains(string(out), "bridge mcp init"))
	// The owner token is refused: hosts get client tokens.
	owner, _ := daemon.ReadOwnerToken(filepath.Join(dir, daemon.OwnerTokenFile))
	out, err = mcpCommand(dir, "BRIDGE_TOKEN="+owner).CombinedOutput()
	is.Equal(err.(*exec.ExitError).ExitCode(), ExitUsage)
	is.True(strings.Contains(string(out), "owner token"))

	code, outText, _ := run(ctx, "mcp", "init", "--data-dir", dir)
	is.Equal(code, 0)
	is.True(strings.Contains(outText, "claude mcp add bridge -- bridge mcp"))
	fi, err := os.Stat(filepath.Join(dir, MCPTokenFile))
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	code, _, errText := run(ctx, "mcp", "init", "--data-dir", dir)
	is.Equal(code, ExitUsage) // kept unless --force
	is.True(strings.Contains(errText, "--force"))
	code, _, _ = run(ctx, "mcp", "init", "--data-dir", dir, "--force", "--scopes", "read,nope")
	is.Equal(code, ExitUsage)

	client := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: mcpCommand(dir)}, nil)
	is.NoErr(err)
	tools, err := cs.ListTools(ctx, nil)
	is.NoErr(err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	is.Equal(names, []string{"bridge_status", "cancel_job", "get_job", "get_workflow_run", "job_result", "list_jobs", "send_message", "start_workflow_run", "submit_job"})
	structured := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		is.NoErr(err)
		if res.IsError {
			t.Fatalf("%s: %v", name, res.Content[0].(*sdk.TextContent).Text)
		}
		data, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		is.NoErr(json.Unmarshal(data, &m))
		return m
	}
	status := structured("bridge_status", map[string]any{})
	is.Equal(status["bridgeUrl"], st.BridgeURL)
	is.Equal(status["servicesUrl"], st.ServicesURL)
	is.Equal(status["health"], "ready")
	is.Equal(status["client"], "mcp-host")
	is.Equal(status["configuredBridgePort"], float64(daemon.DefaultBridgePort))
	is.Equal(status["portDiffers"], true) // served on port 0
	job := structured("submit_job", map[string]any{"prompt": "over stdio"})
	res := structured("job_result", map[string]any{"jobId": job["id"], "timeoutSeconds": 20})
	is.Equal(res["state"], "succeeded")
	is.True(strings.Contains(res["result"].(string), "over stdio"))
	// mcp init's default scopes have no workflows.
	wr, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "start_workflow_run", Arguments: map[string]any{"templateId": "x", "inputs": map[string]string{}}})
	is.NoErr(err)
	is.True(wr.IsError)
	is.True(strings.Contains(wr.Content[0].(*sdk.TextContent).Text, "insufficient_scope"))
	is.NoErr(cs.Close()) // closes stdin; the child exits

	// A revoked token is refused at start.
	code, _, _ = run(ctx, "revoke", "--data-dir", dir, "--id", "mcp-host")
	is.Equal(code, 0)
	out, err = mcpCommand(dir).CombinedOutput()
	is.Equal(err.(*exec.ExitError).ExitCode(), ExitError)
	is.True(strings.Contains(string(out), "refuses this token"))
}

// TestMCPWithoutDaemon: `bridge mcp` starts while no daemon runs (a host
// launches it at its own start); each tool then says how to start one.
func TestMCPWithoutDaemon(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	tok := "brg_" + strings.Repeat("A", 43)
	client := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: mcpCommand(dir, "BRIDGE_TOKEN="+tok)}, nil)
	is.NoErr(err)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_jobs", Arguments: map[string]any{}})
	is.NoErr(err)
	is.True(res.IsError)
	is.True(strings.Contains(res.Content[0].(*sdk.TextContent).Text, "bridge serve --data-dir "+dir))
	// A malformed token is a usage error.
	out, err := mcpCommand(dir, "BRIDGE_TOKEN=secret").CombinedOutput()
	is.Equal(err.(*exec.ExitError).ExitCode(), ExitUsage)
	is.True(strings.Contains(string(out), "does not hold a bridge token"))
	is.True(!strings.Contains(string(out), "secret")) // never echoed
}
