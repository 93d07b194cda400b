package bridge_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
)

func (e *env) openai(tok string) openai.Client {
	return openai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey(tok), option.WithMaxRetries(0))
}

func TestChatCompletionWithOpenAIClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	client := e.openai(tok)
	ctx := context.Background()
	comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "bridge/default",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello from openai-go")},
	})
	is.NoErr(err)
	is.Equal(comp.Choices[0].Message.Content, "hello from openai-go")
	is.Equal(string(comp.Choices[0].FinishReason), "stop")
	is.True(comp.Usage.TotalTokens > 0)
	is.True(strings.HasPrefix(comp.ID, "chatcmpl-"))

	// Each completion is a job of the client.
	jobID := strings.TrimPrefix(comp.ID, "chatcmpl-")
	job := e.do("GET", "/v1/bridge/jobs/"+jobID, tok, nil).json(t)
	is.Equal(job["source"], "chat")
	is.Equal(job["state"], "succeeded")

	// A transcript through the claude profile, with a system message.
	comp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "bridge/claude",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("be brief"), openai.UserMessage("#transcript:tools"),
		},
	})
	is.NoErr(err)
	is.True(strings.Contains(comp.Choices[0].Message.Content, "Hello, world"))
}

func TestChatCompletionStreaming(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	client := e.openai(tok)
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "bridge/claude",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("#transcript:tools")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	chunks, finish := 0, ""
	for stream.Next() {
		c := stream.Current()
		acc.AddChunk(c)
		chunks++
		if len(c.Choices) > 0 && c.Choices[0].FinishReason != "" {
			finish = c.Choices[0].FinishReason
		}
	}
	is.NoErr(stream.Err())
	is.True(chunks >= 4) // role, text deltas, finish, usage
	is.Equal(finish, "stop")
	is.True(strings.Contains(acc.Choices[0].Message.Content, "Hello, world"))
	is.True(acc.Usage.TotalTokens > 0)
}

func TestChatErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := e.token("ide", "read,submit", "default")
	readOnly := e.token("viewer", "read")
	cases := []struct {
		name, token, body string
		status            int
		typ, code         string
	}{
		{"unknown model", tok, `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`, 404, "invalid_request_error", "model_not_found"},
		{"missing model", tok, `{"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "missing_required_parameter"},
		{"no messages", tok, `{"model":"bridge/default","messages":[]}`, 400, "invalid_request_error", "invalid_value"},
		{"bad role", tok, `{"model":"bridge/default","messages":[{"role":"wizard","content":"x"}]}`, 400, "invalid_request_error", "invalid_value"},
		{"image part", tok, `{"model":"bridge/default","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "invalid_request_error", "invalid_value"},
		{"n=2", tok, `{"model":"bridge/default","n":2,"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "invalid_value"},
		{"profile not allowed", tok, `{"model":"bridge/claude","messages":[{"role":"user","content":"x"}]}`, 403, "permission_error", "profile_not_allowed"},
		{"needs submit", readOnly, `{"model":"bridge/default","messages":[{"role":"user","content":"x"}]}`, 403, "permission_error", "insufficient_scope"},
		{"bad key", "brg_" + strings.Repeat("x", 43), `{"model":"bridge/default","messages":[{"role":"user","content":"x"}]}`, 401, "authentication_error", "invalid_api_key"},
		{"malformed", tok, `{"model":`, 400, "invalid_request_error", "invalid_body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("POST", "/v1/chat/completions", c.token, c.body)
			m := r.json(t)
			er, _ := m["error"].(map[string]any)
			if r.Status != c.status || er == nil || er["type"] != c.typ || er["code"] != c.code {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
			if _, ok := er["param"]; !ok {
				t.Fatal("error lacks param")
			}
		})
	}
	// The official client surfaces these as *openai.Error.
	oc := e.openai(tok)
	_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "nope", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Fatalf("openai-go error: %v", err)
	}
}

func TestChatFailedAgentIsServerError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := e.token("ide", "read,submit")
	r := e.do("POST", "/v1/chat/completions", tok, `{"model":"bridge/claude","messages":[{"role":"user","content":"#crash"}]}`)
	er := r.json(t)["error"].(map[string]any)
	if r.Status != 502 || er["type"] != "server_error" || er["code"] != "agent_crashed" {
		t.Fatalf("got %d %s", r.Status, r.Body)
	}
}

func TestChatDisconnectCancelsJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"bridge/claude","messages":[{"role":"user","content":"#hang"}]}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	id := waitChatJob(t, e, tok, "running")
	cancel()
	<-done
	e.waitState(tok, id, "cancelled")
	is.True(true)
}

func TestRevocationEndsChatWaiter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	result := e.chatAsync(tok, `{"model":"bridge/claude","stream":true,"messages":[{"role":"user","content":"#hang"}]}`)
	id := waitChatJob(t, e, e.owner, "running")
	is.Equal(e.do("DELETE", "/v1/bridge/admin/clients/ide", e.owner, nil).Status, 200)
	select {
	case r := <-result:
		is.True(strings.Contains(string(r.Body), `"code":"token_revoked"`)) // the stream says why it ends
	case <-time.After(10 * time.Second):
		t.Fatal("chat waiter still open after revocation")
	}
	e.waitState(e.owner, id, "cancelled") // no waiter remains: its job is cancelled
}

// waitChatJob finds the newest chat job once it reaches state.
func waitChatJob(t *testing.T, e *env, tok, state string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		jobs := e.do("GET", "/v1/bridge/jobs?order=desc&limit=1", tok, nil).json(t)["jobs"].([]any)
		if len(jobs) > 0 {
			j := jobs[0].(map[string]any)
			if j["source"] == "chat" && j["state"] == state {
				return j["id"].(string)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no chat job reached " + state)
	return ""
}

func TestModels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read", "default", "claude")
	oc := e.openai(tok)
	page, err := oc.Models.List(context.Background())
	is.NoErr(err)
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	is.Equal(ids, []string{"bridge/default", "bridge/claude"}) // only profiles the token may use
	raw := e.do("GET", "/v1/models", tok, nil)
	is.True(strings.Contains(string(raw.Body), `"demo":true`)) // echo is labelled a demo
}
