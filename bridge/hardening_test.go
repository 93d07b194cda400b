package bridge_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/openai/openai-go"
)

// TestStatusShowsOnlyOwnJobs: a client's /status counts its own jobs; the
// owner's counts every client's.
func TestStatusShowsOnlyOwnJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	a, b := e.token("a", "read,submit"), e.token("b", "read,submit")
	for _, tok := range []string{a, a, b} {
		e.finished(tok, "x")
	}
	total := func(tok string) (n float64, running float64) {
		st := e.do("GET", "/v1/bridge/status", tok, nil).json(t)
		for _, c := range st["jobs"].(map[string]any) {
			n += c.(float64)
		}
		return n, st["concurrency"].(map[string]any)["running"].(float64)
	}
	n, _ := total(a)
	is.Equal(n, float64(2))
	n, _ = total(b)
	is.Equal(n, float64(1))
	n, _ = total(e.owner)
	is.Equal(n, float64(3))

	// Nor does a client see how many of the others' jobs run.
	hang := e.submit(b, map[string]any{"prompt": "#hang", "profile": "claude"})
	e.waitState(b, hang, "running")
	_, running := total(a)
	is.Equal(running, float64(0))
	_, running = total(e.owner)
	is.Equal(running, float64(1))
}

// finished submits a job with prompt and waits until it succeeded.
func (e *env) finished(tok, prompt string) string {
	e.t.Helper()
	id := e.submit(tok, map[string]any{"prompt": prompt})
	e.waitState(tok, id, "succeeded")
	return id
}

// rawRequest sends a request with headers added (not set), so a header can
// be sent twice.
func (e *env) rawRequest(method, path, body string, hdr ...string) resp {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	r, err := send(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// chatAsync posts a chat completion in the background; the channel yields
// its whole answer (Status -1 when the request failed).
func (e *env) chatAsync(tok, body string) <-chan resp {
	out := make(chan resp, 1)
	go func() {
		req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		r, err := send(req)
		if err != nil {
			r = resp{Status: -1, Body: []byte(err.Error())}
		}
		out <- r
	}()
	return out
}

// TestStrictRequestParsing: duplicate keys, invalid UTF-8, lone surrogates
// and two Authorization headers are refused with a 4xx in the surface's
// error shape, and change nothing.
func TestStrictRequestParsing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit,control,workflows")
	id := e.finished(tok, "first")
	auth := "Bearer " + tok
	for name, tc := range map[string]struct{ path, body string }{
		"job duplicate key":        {"/v1/bridge/jobs", `{"prompt":"a","prompt":"b"}`},
		"job duplicate nested key": {"/v1/bridge/jobs", `{"prompt":"a","metadata":{"k":"1","k":"2"}}`},
		"job escaped duplicate":    {"/v1/bridge/jobs", `{"prompt":"a","\u0070rompt":"b"}`},
		"job invalid UTF-8":        {"/v1/bridge/jobs", "{\"prompt\":\"a\xffb\"}"},
		"job lone surrogate":       {"/v1/bridge/jobs", `{"prompt":"a\ud800b"}`},
		"job lone low surrogate":   {"/v1/bridge/jobs", `{"prompt":"a\udc00"}`},
		"message duplicate key":    {"/v1/bridge/jobs/" + id + "/messages", `{"text":"a","text":"b"}`},
		"message lone surrogate":   {"/v1/bridge/jobs/" + id + "/messages", `{"text":"\udfff"}`},
		"control invalid UTF-8":    {"/v1/bridge/jobs/" + id + "/retry", "{\"\xfe\":1}"},
		"workflow run duplicate":   {"/v1/bridge/workflow-runs", `{"templateId":"a/b","inputs":{"x":"1","x":"2"}}`},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.rawRequest("POST", tc.path, tc.body, "Authorization", auth)
			if r.Status != 400 || r.code() != "invalid_request" {
				t.Fatalf("%s: %d %s", name, r.Status, r.Body)
			}
		})
	}
	r := e.rawRequest("POST", "/v1/bridge/admin/tokens", `{"id":"x","id":"y","scopes":["read"],"profiles":["*"]}`, "Authorization", "Bearer "+e.owner)
	is.Equal(r.Status, 400)
	is.Equal(r.code(), "invalid_request")

	// Two Authorization headers, even two equal ones: which is meant is a guess.
	for _, second := range []string{auth, "Bearer " + e.owner} {
		r = e.rawRequest("GET", "/v1/bridge/jobs", "", "Authorization", auth, "Authorization", second)
		is.Equal(r.Status, 400)
		is.Equal(r.code(), "invalid_parameter")
	}
	is.Equal(e.rawRequest("GET", "/v1/bridge/jobs", "", "Authorization", auth).Status, 200)

	// Chat Completions keeps OpenAI's shape.
	chat := e.rawRequest("POST", "/v1/chat/completions", `{"model":"bridge/default","model":"bridge/claude","messages":[{"role":"user","content":"hi"}]}`, "Authorization", auth)
	is.Equal(chat.Status, 400)
	is.True(strings.Contains(string(chat.Body), `"type":"invalid_request_error"`))
	chat = e.rawRequest("POST", "/v1/chat/completions", `{"model":"bridge/default","messages":[{"role":"user","content":"\ud83d"}]}`, "Authorization", auth)
	is.Equal(chat.Status, 400)
	chat = e.rawRequest("GET", "/v1/models", "", "Authorization", auth, "Authorization", auth)
	is.Equal(chat.Status, 400)
	is.True(strings.Contains(string(chat.Body), `"type":"invalid_request_error"`))

	// Nothing changed: one job, one message, still succeeded.
	jobs := e.do("GET", "/v1/bridge/jobs", e.owner, nil).json(t)["jobs"].([]any)
	is.Equal(len(jobs), 1)
	is.Equal(jobs[0].(map[string]any)["state"], "succeeded")
	msgs := e.do("GET", "/v1/bridge/jobs/"+id+"/messages", tok, nil).json(t)["messages"].([]any)
	is.Equal(len(msgs), 2) // the prompt and the answer
	// A pair of surrogates is a character, not a lone one.
	ok := e.rawRequest("POST", "/v1/bridge/jobs", `{"prompt":"\ud83d\ude00"}`, "Authorization", auth)
	is.Equal(ok.Status, 202)
	is.True(strings.Contains(string(ok.Body), "😀"))
}

// TestIdempotencyComparesCanonicalJSON: whitespace and key order do not
// make a repeat a different request; a different value does.
func TestIdempotencyComparesCanonicalJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	first := e.do("POST", "/v1/bridge/jobs", tok, `{"prompt":"p","metadata":{"a":"1","b":"2"}}`, "Idempotency-Key", "job")
	is.Equal(first.Status, 202)
	again := e.do("POST", "/v1/bridge/jobs", tok, "{ \"metadata\" : { \"b\": \"2\", \"a\": \"1\" },\n \"prompt\": \"\\u0070\" }", "Idempotency-Key", "job")
	is.Equal(again.Status, 202)
	is.Equal(again.Header.Get("Idempotent-Replayed"), "true")
	is.Equal(again.json(t)["id"], first.json(t)["id"])
	conflict := e.do("POST", "/v1/bridge/jobs", tok, `{"prompt":"p","metadata":{"a":"1","b":"3"}}`, "Idempotency-Key", "job")
	is.Equal(conflict.Status, 409)
	is.Equal(conflict.code(), "idempotency_conflict")

	id := first.json(t)["id"].(string)
	e.waitState(tok, id, "succeeded")
	path := "/v1/bridge/jobs/" + id + "/messages"
	m1 := e.do("POST", path, tok, `{"text":"a"}`, "Idempotency-Key", "msg")
	is.Equal(m1.Status, 202)
	m2 := e.do("POST", path, tok, `{ "text": "a" }`, "Idempotency-Key", "msg")
	is.Equal(m2.Status, 202)
	is.Equal(m2.Header.Get("Idempotent-Replayed"), "true")
	m3 := e.do("POST", path, tok, `{"text":"b"}`, "Idempotency-Key", "msg")
	is.Equal(m3.Status, 409)
	is.Equal(m3.code(), "idempotency_conflict")
	is.Equal(len(e.do("GET", "/v1/bridge/jobs", tok, nil).json(t)["jobs"].([]any)), 1)
}

// TestLastEventIDAheadOfNewest: an id no event has had is refused, not
// waited for in silence.
func TestLastEventIDAheadOfNewest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	e.finished(tok, "x")
	// Events are published just after their commit: wait for the first.
	var newest uint64
	for end := time.Now().Add(20 * time.Second); newest == 0 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		newest = uint64(e.do("GET", "/v1/bridge/status", tok, nil).json(t)["events"].(map[string]any)["newest"].(float64))
	}
	is.True(newest > 0)
	_, r := e.stream(tok, "Last-Event-ID", fmt.Sprint(newest+1000))
	is.Equal(r.Status, 400)
	is.Equal(r.code(), "invalid_parameter")
	is.True(strings.Contains(string(r.Body), "newer than the newest event"))
	// The newest id itself resumes: the next event arrives, whether it is a
	// late event of the finished job or the new job's.
	s, r := e.stream(tok, "Last-Event-ID", fmt.Sprint(newest))
	is.Equal(r.Status, 200)
	e.submit(tok, map[string]any{"prompt": "y"})
	ev := s.next(t, 20*time.Second, func(ev sseEvent) bool { return ev.ID != "" })
	is.Equal(ev.ID, fmt.Sprint(newest+1))
}

// TestRevocationDuringCompletionAnswers401: a waiting non-streaming
// completion of a revoked client answers 401 token_revoked in OpenAI's
// shape, not a non-standard status.
func TestRevocationDuringCompletionAnswers401(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	result := e.chatAsync(tok, `{"model":"bridge/claude","messages":[{"role":"user","content":"#hang"}]}`)
	id := waitChatJob(t, e, e.owner, "running")
	is.Equal(e.do("DELETE", "/v1/bridge/admin/clients/ide", e.owner, nil).Status, 200)
	select {
	case r := <-result:
		is.Equal(r.Status, 401)
		is.Equal(r.code(), "token_revoked")
		is.True(strings.Contains(string(r.Body), `"type":"authentication_error"`))
	case <-time.After(10 * time.Second):
		t.Fatal("completion still waiting after revocation")
	}
	e.waitState(e.owner, id, "cancelled")
}

// TestHeadAnswersLikeGet: every GET route answers HEAD with GET's status
// and headers and no body; the OpenAPI document lists those HEADs.
func TestHeadAnswersLikeGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	id := e.finished(tok, "x")
	doc := e.do("GET", "/v1/bridge/openapi.json", tok, nil).json(t)
	heads := 0
	for p, item := range doc["paths"].(map[string]any) {
		ops := item.(map[string]any)
		_, get := ops["get"]
		_, head := ops["head"]
		is.Equal(get, head) // a HEAD is documented exactly for each GET
		if !get || p == "/v1/bridge/events" {
			continue
		}
		heads++
		p = strings.NewReplacer("{id}", id, "{tool}", "1", "{model}", "bridge/default").Replace(p)
		g := e.do("GET", p, tok, nil)
		h := e.do("HEAD", p, tok, nil)
		if h.Status != g.Status || len(h.Body) != 0 || h.Header.Get("Content-Type") != g.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q (%s); GET %d", p, h.Status, h.Body, h.Header.Get("Content-Type"), g.Status)
		}
	}
	is.True(heads >= 10)
	h := e.do("HEAD", "/v1/bridge/events", tok, nil)
	is.Equal(h.Status, 200)
	is.Equal(h.Header.Get("Content-Type"), "text/event-stream")
	is.Equal(e.do("HEAD", "/v1/bridge/jobs", "", nil).Status, 401)
	is.Equal(e.do("HEAD", "/v1/bridge/nothing", tok, nil).Status, 404)
}

// TestModelRetrieve: GET /v1/models/{id} (openai models.retrieve) answers
// the model; an unknown one, or one the token may not use, 404 in OpenAI's
// error shape.
func TestModelRetrieve(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read", "default", "claude")
	oc := e.openai(tok)
	m, err := oc.Models.Get(context.Background(), "bridge/claude")
	is.NoErr(err)
	is.Equal(m.ID, "bridge/claude")
	is.Equal(string(m.Object), "model")
	for _, p := range []string{"/v1/models/bridge/default", "/v1/models/bridge%2Fdefault"} {
		r := e.do("GET", p, tok, nil)
		is.Equal(r.Status, 200)
		is.Equal(r.json(t)["id"], "bridge/default")
	}
	for _, p := range []string{"/v1/models/bridge/nope", "/v1/models/gpt-4o", "/v1/models/bridge/codex", "/v1/models/"} {
		r := e.do("GET", p, tok, nil)
		is.Equal(r.Status, 404)
		errObj := r.json(t)["error"].(map[string]any)
		is.Equal(errObj["code"], "model_not_found")
		is.Equal(errObj["type"], "invalid_request_error")
	}
	_, err = oc.Models.Get(context.Background(), "bridge/nope")
	is.True(err != nil && strings.Contains(err.Error(), "404"))
}

// TestChatStreamHeartbeatsKeepOpenAIClientWorking: keep-alive comments
// between chunks must not reach the official client as empty events (it
// fails on them with "unexpected end of JSON input").
func TestChatStreamHeartbeatsKeepOpenAIClientWorking(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBridge("  heartbeat: 10ms\n"))
	is := is.New(t)
	oc := e.openai(e.token("ide", "read,submit"))
	stream := oc.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "bridge/claude",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("#slow:80 slow hello")},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	is.NoErr(stream.Err())
	is.True(strings.Contains(acc.Choices[0].Message.Content, "slow hello"))
}
