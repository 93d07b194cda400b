package provider

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestMCPArgs(t *testing.T) {
	is := is.New(t)
	m := &MCPServer{Name: "bridge", URL: "http://127.0.0.1:7777/v1/bridge/jobs/j1/mcp", Token: "brg_secret"}
	got := strings.Join(codexArgs(cfgArgs(), Request{MCP: m}), " ")
	is.Equal(got, `exec --json -c mcp_servers.bridge.url="http://127.0.0.1:7777/v1/bridge/jobs/j1/mcp" -c mcp_servers.bridge.bearer_token_env_var="BRIDGE_MCP_TOKEN" --sandbox workspace-write -`)
	is.True(!strings.Contains(got, m.Token)) // the token is never an argument

	path, err := writeClaudeMCPConfig(m)
	is.NoErr(err)
	defer os.Remove(path)
	if runtime.GOOS != "windows" {
		st, err := os.Stat(path)
		is.NoErr(err)
		is.Equal(st.Mode().Perm(), os.FileMode(0o600))
	}
	b, err := os.ReadFile(path)
	is.NoErr(err)
	var cfg map[string]map[string]struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	is.NoErr(json.Unmarshal(b, &cfg))
	srv := cfg["mcpServers"]["bridge"]
	is.Equal(srv.Type, "http")
	is.Equal(srv.URL, m.URL)
	is.Equal(srv.Headers["Authorization"], "Bearer brg_secret")
}

// TestClaudeMCPConfigLivesForTheTurn: the agent sees the configuration
// file and the strict flags; the file is gone when the turn ends.
func TestClaudeMCPConfigLivesForTheTurn(t *testing.T) {
	is := is.New(t)
	p := newFakeProvider(t, "claude", Config{})
	m := &MCPServer{Name: "bridge", URL: "http://127.0.0.1:1/mcp", Token: "brg_x"}
	_, res, err := run(t, p, context.Background(), Request{Prompt: "#args", MCP: m})
	is.NoErr(err)
	args := strings.Fields(res.Text)
	i := slices.Index(args, "--mcp-config")
	is.True(i >= 0 && i+1 < len(args))
	is.True(strings.Contains(res.Text, "--strict-mcp-config --allowedTools mcp__bridge"))
	_, err = os.Stat(args[i+1])
	is.True(os.IsNotExist(err))
}
