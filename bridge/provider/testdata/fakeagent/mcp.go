package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// #mcp-call:TOOL:JSON makes the fake agent an MCP client of the server its
// --mcp-config names (Claude's configuration file: type http, url,
// headers): it calls TOOL with the JSON arguments (no spaces) and reports
// the call as Claude does, a tool_use and its tool_result, answering with
// the result's text.

type mcpCall struct {
	tool  string
	input json.RawMessage
}

func parseMCPCall(val string) (mcpCall, bool) {
	tool, in, _ := strings.Cut(val, ":")
	if in == "" {
		in = "{}"
	}
	if tool == "" || !json.Valid([]byte(in)) {
		return mcpCall{}, false
	}
	return mcpCall{tool: tool, input: json.RawMessage(in)}, true
}

type mcpConfig struct {
	MCPServers map[string]struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	} `json:"mcpServers"`
}

type headerTransport struct{ headers map[string]string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// callMCP answers the server's name, the result's text and whether it is
// an error.
func callMCP(configPath string, c mcpCall) (string, string, bool, error) {
	b, err := os.ReadFile(configPath)
	if err != nil {
		return "", "", false, err
	}
	var cfg mcpConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", "", false, err
	}
	for name, srv := range cfg.MCPServers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		client := sdk.NewClient(&sdk.Implementation{Name: "fakeagent", Version: "1"}, nil)
		session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: headerTransport{srv.Headers}}}, nil)
		if err != nil {
			return name, "", false, err
		}
		defer session.Close()
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: c.input})
		if err != nil {
			return name, err.Error(), true, nil
		}
		var text []string
		for _, ct := range res.Content {
			if t, ok := ct.(*sdk.TextContent); ok {
				text = append(text, t.Text)
			}
		}
		return name, strings.Join(text, "\n"), res.IsError, nil
	}
	return "", "", false, fmt.Errorf("no MCP server in %s", configPath)
}

// mcpLines are Claude's lines for one MCP tool call.
func mcpLines(sid, server string, c mcpCall, text string, isError bool) []string {
	id := "toolu_fake_" + c.tool
	return []string{
		mustJSON(map[string]any{"type": "assistant", "message": map[string]any{
			"id": "msg_fake00", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
			"content": []any{map[string]any{"type": "tool_use", "id": id, "name": "mcp__" + server + "__" + c.tool, "input": c.input}}},
			"parent_tool_use_id": nil, "session_id": sid, "uuid": newUUID()}),
		mustJSON(map[string]any{"type": "user", "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": isError}}},
			"parent_tool_use_id": nil, "session_id": sid, "uuid": newUUID()}),
	}
}
