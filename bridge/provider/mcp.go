package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

// MCPServer is an MCP server a turn's agent may use: the per-job endpoint
// that serves an agent step's tools (docs/workflow-language.md, "Agent
// steps"). Token is a bearer credential that dies with the turn.
type MCPServer struct {
	// Name is the server's name in the agent's configuration ("bridge": its
	// tools appear to Claude as mcp__bridge__<tool>).
	Name  string
	URL   string
	Token string
}

// MCPTokenEnv is the environment variable that carries the endpoint's
// token to Codex (mcp_servers.<name>.bearer_token_env_var): the token
// never appears on a command line.
const MCPTokenEnv = "BRIDGE_MCP_TOKEN"

// writeClaudeMCPConfig writes the --mcp-config file of a turn: readable by
// the daemon's user only, since it holds the token. The caller removes it
// when the turn ends.
func writeClaudeMCPConfig(m *MCPServer) (string, error) {
	cfg := map[string]any{"mcpServers": map[string]any{m.Name: map[string]any{
		"type": "http", "url": m.URL, "headers": map[string]string{"Authorization": "Bearer " + m.Token}}}}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "bridge-mcp-*.json") // created 0600
	if err != nil {
		return "", fmt.Errorf("write the MCP configuration: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("write the MCP configuration: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write the MCP configuration: %w", err)
	}
	return f.Name(), nil
}

// claudeMCPArgs: only the bridge's server (--strict-mcp-config ignores the
// user's own MCP configuration), and its tools allowed without a prompt
// (print mode cannot ask).
func claudeMCPArgs(path, name string) []string {
	return []string{"--mcp-config", path, "--strict-mcp-config", "--allowedTools", "mcp__" + name}
}

// codexMCPArgs configures the server with -c overrides (TOML values).
func codexMCPArgs(m *MCPServer) []string {
	prefix := "mcp_servers." + m.Name + "."
	return []string{"-c", prefix + "url=" + strconv.Quote(m.URL), "-c", prefix + "bearer_token_env_var=" + strconv.Quote(MCPTokenEnv)}
}
