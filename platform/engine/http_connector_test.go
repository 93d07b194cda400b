package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/platform/lang"
)

// httpTask compiles an http action with config (YAML, indented under
// config:) and answers a task of it with input.
func httpTask(t *testing.T, config string, input any) *kernel.TaskSpec {
	t.Helper()
	src := "kind: action\nid: t/http\nversion: 1\nsideEffect: idempotent\ninput: {type: object}\nconnector: http\nconfig:\n" + config
	res := lang.Compile([]byte(src), lang.Options{Catalog: &lang.CatalogLock{}})
	if !res.OK {
		t.Fatalf("compile: %+v", res.Diagnostics)
	}
	var art struct {
		Binding json.RawMessage `json:"binding"`
	}
	if err := json.Unmarshal(res.Artifact, &art); err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return &kernel.TaskSpec{TaskID: "task-1", NodeID: "call", Binding: art.Binding, Input: in, IdempotencyKey: "op-1"}
}

// seen is a request as the test server saw it.
type seen struct {
	Method, Path, RawQuery, Body string
	Header                       http.Header
}

// recorder is a test server answering with handle and keeping the last
// request.
func recorder(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, func() seen, *atomic.Int64) {
	t.Helper()
	var last atomic.Pointer[seen]
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last.Store(&seen{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Body: string(b), Header: r.Header.Clone()})
		n.Add(1)
		handle(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() seen {
		if s := last.Load(); s != nil {
			return *s
		}
		return seen{}
	}, &n
}

func jsonReply(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Secret", "s3cret-header")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func call(t *testing.T, task *kernel.TaskSpec, shape httpShape) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return callHTTP(ctx, defaultHTTPClient(), task, shape)
}

func TestHTTPMethods(t *testing.T) {
	srv, last, _ := recorder(t, jsonReply(200, `{"ok":true}`))
	for _, m := range httpMethods {
		t.Run(m, func(t *testing.T) {
			is := is.New(t)
			o := call(t, httpTask(t, "  method: "+m+"\n  url: =input.url + \"/things/1\"\n", map[string]any{"url": srv.URL}), httpShape{})
			is.True(o.Err == nil)
			is.True(!o.Unknown)
			s := last()
			is.Equal(s.Method, m)
			is.Equal(s.Path, "/things/1")
			is.Equal(s.Body, "")
			is.Equal(s.Header.Get("Idempotency-Key"), "op-1")
			is.Equal(s.Header.Get("User-Agent"), httpUserAgent)
			var out struct {
				Status  int               `json:"status"`
				Headers map[string]string `json:"headers"`
				Body    any               `json:"body"`
			}
			is.NoErr(json.Unmarshal(o.Output, &out))
			is.Equal(out.Status, 200)
			is.Equal(out.Headers["content-type"], "application/json; charset=utf-8")
			if m == http.MethodHead {
				is.Equal(out.Body, nil) // a HEAD response has no body
			} else {
				is.Equal(out.Body, map[string]any{"ok": true})
			}
			is.True(strings.HasPrefix(o.Note, m+" "+srv.URL+"/things/1 → 200 in "))
			is.True(strings.HasSuffix(o.Note, " ms"))
		})
	}
}

func TestHTTPRequestShape(t *testing.T) {
	is := is.New(t)
	srv, last, _ := recorder(t, jsonReply(201, `{"id":"t-9","n":12345678901234567890}`))
	input := map[string]any{"url": srv.URL, "name": "Ada <&>", "trace": "tr-1", "q": "a b"}
	o := call(t, httpTask(t, `  method: POST
  url: =input.url + "/api/items?x=1&q=old"
  query:
    q: =input.q
    page: "2"
  headers:
    X-Trace: =input.trace
    Authorization: ="Bearer " + input.trace
  body:
    name: =input.name
    count: 3
    ratio: 0.5
    tags: [a, =input.trace]
`, input), httpShape{})
	is.True(o.Err == nil)
	s := last()
	is.Equal(s.Method, "POST")
	is.Equal(s.Path, "/api/items")
	is.Equal(s.RawQuery, "page=2&q=a+b&x=1")
	is.Equal(s.Header.Get("X-Trace"), "tr-1")
	is.Equal(s.Header.Get("Content-Type"), "application/json")
	is.Equal(s.Header.Get("Idempotency-Key"), "op-1")
	var body map[string]any
	is.NoErr(json.Unmarshal([]byte(s.Body), &body))
	is.Equal(body, map[string]any{"name": "Ada <&>", "count": 3.0, "ratio": 0.5, "tags": []any{"a", "tr-1"}})
	// Big numbers of the response survive; the note names no query.
	is.True(strings.Contains(string(o.Output), `"n":12345678901234567890`))
	is.Equal(strings.Contains(o.Note, "?"), false)
	is.True(strings.HasPrefix(o.Note, "POST "+srv.URL+"/api/items → 201 in "))

	// A string body is sent as is; headers of the config win.
	o = call(t, httpTask(t, `  method: PUT
  url: =input.url
  headers:
    Content-Type: application/xml
    Idempotency-Key: =input.key
    User-Agent: mine/1
  body: =input.doc
`, map[string]any{"url": srv.URL, "key": "k-7", "doc": "<a>1</a>"}), httpShape{})
	is.True(o.Err == nil)
	s = last()
	is.Equal(s.Body, "<a>1</a>")
	is.Equal(s.Header.Get("Content-Type"), "application/xml")
	is.Equal(s.Header.Get("Idempotency-Key"), "k-7")
	is.Equal(s.Header.Get("User-Agent"), "mine/1")
	o = call(t, httpTask(t, "  method: PATCH\n  url: =input.url\n  body: plain text\n", map[string]any{"url": srv.URL}), httpShape{})
	is.True(o.Err == nil)
	is.Equal(last().Body, "plain text")
	is.Equal(last().Header.Get("Content-Type"), "text/plain; charset=utf-8")
}

func TestHTTPResponseMapping(t *testing.T) {
	is := is.New(t)
	srv, _, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/text":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "hello")
		case "/empty":
			w.WriteHeader(204)
		case "/badjson":
			w.Header().Set("Content-Type", "application/problem+json")
			_, _ = io.WriteString(w, "{not json")
		case "/list":
			w.Header().Set("Content-Type", "application/vnd.acme+json")
			_, _ = io.WriteString(w, " [1, 2] \n")
		}
	})
	get := func(path string, shape httpShape) outcome {
		return call(t, httpTask(t, "  method: GET\n  url: =input.url\n", map[string]any{"url": srv.URL + path}), shape)
	}
	envelope := func(o outcome) map[string]any {
		is.True(o.Err == nil)
		var m map[string]any
		is.NoErr(json.Unmarshal(o.Output, &m))
		return m
	}
	is.Equal(envelope(get("/text", httpShape{}))["body"], "hello")
	is.Equal(envelope(get("/empty", httpShape{}))["status"], 204.0)
	is.Equal(envelope(get("/empty", httpShape{}))["body"], nil)
	is.Equal(envelope(get("/badjson", httpShape{}))["body"], "{not json")
	is.Equal(envelope(get("/list", httpShape{}))["body"], []any{1.0, 2.0})

	// The body alone.
	is.Equal(string(get("/list", httpShape{bodyOnly: true}).Output), `[1, 2]`)
	is.Equal(string(get("/text", httpShape{bodyOnly: true}).Output), `"hello"`)
	var checked string
	o := get("/list", httpShape{bodyOnly: true, check: func(out json.RawMessage) error {
		checked = string(out)
		return errors.New("kernel: PF-VALIDATION: the output does not match the pinned output schema")
	}})
	is.Equal(checked, `[1, 2]`)
	is.Equal(o.Err.Code, kernel.ErrCodeOutputInvalid)
	is.True(!o.Retryable)
	is.True(strings.Contains(o.Err.Message, "pinned output schema"))
	is.True(strings.Contains(o.Note, "→ 200 in"))
}

func TestHTTPStatusClasses(t *testing.T) {
	srv, _, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		code := 0
		_ = json.Unmarshal([]byte(strings.TrimPrefix(r.URL.Path, "/")), &code)
		jsonReply(code, `{"error":"went `+"\n"+` wrong","detail":"`+strings.Repeat("x", 400)+`"}`)(w, r)
	})
	for code, retryable := range map[int]bool{408: true, 425: true, 429: true, 500: true, 502: true, 503: true, 599: true,
		400: false, 401: false, 403: false, 404: false, 409: false, 422: false} {
		t.Run(jsonNumber(code), func(t *testing.T) {
			is := is.New(t)
			o := call(t, httpTask(t, "  method: DELETE\n  url: =input.url\n", map[string]any{"url": srv.URL + "/" + jsonNumber(code)}), httpShape{})
			is.True(o.Err != nil)
			is.True(!o.Unknown)
			is.Equal(o.Err.Code, "HTTP_"+jsonNumber(code))
			is.Equal(o.Retryable, retryable)
			is.True(strings.HasPrefix(o.Err.Message, "the server answered "+jsonNumber(code)))
			is.True(strings.Contains(o.Err.Message, `{"error":"went wrong","detail":"xxx`)) // whitespace folded
			is.True(strings.HasSuffix(o.Err.Message, "…"))
			is.True(len(o.Err.Message) < 300)
			is.True(!strings.Contains(o.Err.Message, "s3cret"))
			is.True(strings.Contains(o.Note, "→ "+jsonNumber(code)+" in "))
		})
	}
}

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestHTTPRedirectNotFollowed(t *testing.T) {
	is := is.New(t)
	target, _, hits := recorder(t, jsonReply(200, `{}`))
	srv, _, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/next?token=s3cret", http.StatusFound)
	})
	// Even a client that would follow redirects does not.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	o := callHTTP(ctx, &http.Client{}, httpTask(t, "  method: POST\n  url: =input.url\n", map[string]any{"url": srv.URL}), httpShape{})
	is.Equal(o.Err.Code, "HTTP_302")
	is.True(!o.Retryable)
	is.True(strings.Contains(o.Err.Message, "redirects are not followed (Location: "+target.URL+"/next)"))
	is.Equal(hits.Load(), int64(0))
}

func TestHTTPTimeoutIsUnknown(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	srv, _, hits := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	// 2 s: the request must reach the server before the deadline, even on a
	// loaded machine running -race.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	o := callHTTP(ctx, defaultHTTPClient(), httpTask(t, "  method: POST\n  url: =input.url\n  query: {key: secret}\n",
		map[string]any{"url": srv.URL + "/slow"}), httpShape{})
	is.True(o.Unknown)
	is.True(o.Err == nil)
	is.True(strings.Contains(o.Note, "no answer within the attempt's timeout"))
	is.True(!strings.Contains(o.Note, "secret"))
	is.Equal(hits.Load(), int64(1))
}

func TestHTTPConnectionResetIsUnknown(t *testing.T) {
	is := is.New(t)
	srv, _, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
	o := call(t, httpTask(t, "  method: POST\n  url: =input.url\n", map[string]any{"url": srv.URL}), httpShape{})
	is.True(o.Unknown)
	is.True(strings.Contains(o.Note, "the connection broke off"))
}

func TestHTTPConnectionRefusedIsRetryable(t *testing.T) {
	is := is.New(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	addr := l.Addr().String()
	is.NoErr(l.Close())
	o := call(t, httpTask(t, "  method: POST\n  url: =input.url\n", map[string]any{"url": "http://user:pw@" + addr + "/x?token=t"}), httpShape{})
	is.True(!o.Unknown)
	is.Equal(o.Err.Code, codeConnectionFailed)
	is.True(o.Retryable)
	is.True(strings.Contains(o.Err.Message, "refused"))
	is.True(strings.HasPrefix(o.Note, "POST http://"+addr+"/x → not sent after "))
	is.True(!strings.Contains(o.Note+o.Err.Message, "pw"))
	is.True(!strings.Contains(o.Note+o.Err.Message, "token"))
}

func TestHTTPResponseTooLarge(t *testing.T) {
	is := is.New(t)
	big := strings.Repeat("a", maxHTTPResponseBytes+1)
	srv, _, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		n := maxHTTPResponseBytes - 10
		if r.URL.Path == "/big" {
			n = len(big)
		}
		_, _ = io.WriteString(w, big[:n])
	})
	o := call(t, httpTask(t, "  method: GET\n  url: =input.url\n", map[string]any{"url": srv.URL + "/big"}), httpShape{})
	is.Equal(o.Err.Code, codeResponseTooLarge)
	is.True(!o.Retryable)
	// Under the body limit, but the envelope is over the payload limit.
	o = call(t, httpTask(t, "  method: GET\n  url: =input.url\n", map[string]any{"url": srv.URL + "/almost"}), httpShape{})
	is.Equal(o.Err.Code, codeResponseTooLarge)
	o = call(t, httpTask(t, "  method: GET\n  url: =input.url\n", map[string]any{"url": srv.URL + "/almost"}), httpShape{bodyOnly: true})
	is.True(o.Err == nil)
}

func TestHTTPConfigInvalid(t *testing.T) {
	for name, c := range map[string]struct {
		config string
		input  map[string]any
		want   string
	}{
		"scheme":     {"  method: GET\n  url: =input.url\n", map[string]any{"url": "ftp://example.com/x"}, "not an absolute http or https URL"},
		"relative":   {"  method: GET\n  url: /x\n", nil, "not an absolute http or https URL"},
		"expression": {"  method: GET\n  url: =input.url\n", map[string]any{}, "no such key"},
		"connection": {"  method: GET\n  url: =\"http://\" + string(connection.host)\n", nil, "no such key"},
		"header":     {"  method: GET\n  url: http://127.0.0.1:1/\n  headers: {X-A: =input.v}\n", map[string]any{"v": "a\r\nb"}, "control characters"},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			o := call(t, httpTask(t, c.config, c.input), httpShape{})
			is.Equal(o.Err.Code, codeConfigInvalid)
			is.True(!o.Retryable)
			is.True(strings.Contains(o.Err.Message, c.want))
		})
	}
}

func TestRetryAfterHeader(t *testing.T) {
	is := is.New(t)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":             0,
		"soon":         0,
		"0":            0,
		"-3":           0,
		" 3 ":          3 * time.Second,
		"999999999999": maxRetryAfter,
		now.Add(10 * time.Second).Format(http.TimeFormat): 10 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
		now.Add(48 * time.Hour).Format(http.TimeFormat):   maxRetryAfter,
	} {
		is.Equal(retryAfter(v, now), want) // each value
	}

	// A retryable answer carries the server's Retry-After; another does
	// not (it is not retried at all).
	srv, _, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		code := 429
		if r.URL.Path == "/400" {
			code = 400
		}
		jsonReply(code, `{}`)(w, r)
	})
	o := call(t, httpTask(t, "  method: GET\n  url: =input.url\n", map[string]any{"url": srv.URL + "/429"}), httpShape{})
	is.True(o.Retryable)
	is.Equal(o.RetryAfter, 7*time.Second)
	is.Equal(o.event("t").RetryAfterMs, int64(7000))
	o = call(t, httpTask(t, "  method: GET\n  url: =input.url\n", map[string]any{"url": srv.URL + "/400"}), httpShape{})
	is.True(!o.Retryable)
	is.Equal(o.RetryAfter, time.Duration(0))
}
