package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// API is a client of the bridge API (docs/bridge-api.md) authenticated
// with one bearer token. The MCP server reaches the daemon only through it,
// so a host gets exactly what the token gets over HTTP: its scopes, its
// client's jobs, the same refusals.
type API struct {
	// Base is the bridge listener's URL, e.g. http://127.0.0.1:8766.
	Base  string
	Token string
	HTTP  *http.Client
	// Resolve, when set, answers the base URL at each call instead of
	// Base: `bridge mcp` outlives daemon restarts, which may move the port.
	Resolve func(ctx context.Context) (string, error)
}

// maxAnswer bounds a bridge answer read into memory (an audit page with
// payloads stops at about 4 MB, docs/bridge-api.md).
const maxAnswer = 16 << 20

// Error is a refusal of the bridge API: its status and error.code.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("the bridge answered HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s (HTTP %d)", e.Code, e.Message, e.Status)
}

// call sends a request and decodes a JSON answer into out. It answers the
// status of a successful (2xx) answer; other answers are *Error.
func (a *API) call(ctx context.Context, method, path string, headers map[string]string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(data)
	}
	base := a.Base
	if a.Resolve != nil {
		var err error
		if base, err = a.Resolve(ctx); err != nil {
			return 0, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(base, "/")+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	client := a.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("the bridge daemon did not answer %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, fmt.Errorf("read the answer of %s %s: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, decodeError(resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode the answer of %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// Check asks the daemon whether it accepts the token (GET /v1/bridge/status).
func (a *API) Check(ctx context.Context) error {
	_, err := a.call(ctx, http.MethodGet, "/v1/bridge/status", nil, nil, nil)
	return err
}

// decodeError reads the bridge's {"error":{"code","message"}} shape.
func decodeError(status int, data []byte) *Error {
	var shape struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e := &Error{Status: status}
	if json.Unmarshal(data, &shape) == nil && shape.Error != nil {
		e.Code, e.Message = shape.Error.Code, shape.Error.Message
		return e
	}
	e.Message = strings.TrimSpace(string(data))
	if len(e.Message) > 200 {
		e.Message = e.Message[:200]
	}
	return e
}

// InProcess is an HTTP client that serves every request with h in the
// calling goroutine: the MCP endpoint on the bridge listener reaches the
// bridge API through the same router, authentication and scope checks as a
// remote client, without a loopback connection.
func InProcess(h http.Handler) *http.Client {
	return &http.Client{Transport: handlerTransport{h}, Timeout: 2 * time.Minute}
}

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	if req.Body == nil {
		req.Body = http.NoBody
	}
	req.RequestURI = req.URL.RequestURI()
	if req.RemoteAddr == "" {
		req.RemoteAddr = "127.0.0.1:0"
	}
	t.h.ServeHTTP(rec, req)
	return &http.Response{
		Status: http.StatusText(rec.status), StatusCode: rec.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(&rec.body), ContentLength: int64(rec.body.Len()), Request: req,
	}, nil
}

// recorder is the response writer of an in-process request.
type recorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.body.Len()+len(p) > maxAnswer {
		return 0, fmt.Errorf("in-process answer exceeds %d bytes", maxAnswer)
	}
	return r.body.Write(p)
}
