// Package client is the typed Go client of the daemon's HTTP APIs: the
// platform API (docs/platform-api.md) and the other surfaces of the
// services listener (factory, callbacks, ingest; subpackages hold their
// wire types) and the bridge API (docs/bridge-api.md). It holds the wire
// types the APIs serve, one request doer with the client retry rule, and
// one decoder of the APIs' two error shapes. It imports no server package:
// the CLI and the end-to-end tests use it as any other client would.
package client

//go:generate go run ./internal/wiregen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of the platform API (docs/platform-api.md, "Generic rules").
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderReplayed is "true" on an answer replayed for an idempotency key.
	HeaderReplayed = "Idempotent-Replayed"
)

// maxAnswer bounds the JSON answers the client reads.
const maxAnswer = 64 << 20

// Client sends requests to one listener of the daemon with a bearer token.
type Client struct {
	// HTTP sends the requests (http.DefaultClient when nil).
	HTTP *http.Client
	// BaseURL is the listener's URL, e.g. http://127.0.0.1:8080.
	BaseURL string
	// Token is sent as "Authorization: Bearer <Token>" unless empty.
	Token string
	// Sleep waits between attempts of the retry rule; nil waits on a timer
	// (tests inject it to run without real waits).
	Sleep func(ctx context.Context, d time.Duration) error
}

// New is a client of baseURL sending token, with hc (nil: the default).
func New(baseURL, token string, hc *http.Client) *Client {
	return &Client{HTTP: hc, BaseURL: baseURL, Token: token}
}

// WithToken is a copy of c that sends token instead.
func (c *Client) WithToken(token string) *Client {
	d := *c
	d.Token = token
	return &d
}

// Streaming is a copy of c without the HTTP client's overall timeout, for
// answers that last as long as they take (downloads, event streams).
func (c *Client) Streaming() *Client {
	d := *c
	hc := *c.httpClient()
	hc.Timeout = 0
	d.HTTP = &hc
	return &d
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// Client retry rule (docs/platform-api.md, "Generic rules"): a request the
// platform did not admit (429 PF-OPERATION-CAPACITY or PF-REQUEST-CAPACITY,
// 503 PF-COMPATIBILITY) is sent again with the exact same body and headers
// (so the same Idempotency-Key) after its Retry-After, at most MaxAttempts
// times in all; a wait longer than MaxRetryWait is not waited for (the
// error says when to try again).
const (
	MaxAttempts  = 4
	MaxRetryWait = time.Minute
)

// Retryable reports whether a refusal may be retried by the retry rule.
func Retryable(status int, code string) bool {
	switch status {
	case http.StatusTooManyRequests:
		return code == "PF-OPERATION-CAPACITY" || code == "PF-REQUEST-CAPACITY"
	case http.StatusServiceUnavailable:
		return code == "PF-COMPATIBILITY"
	}
	return false
}

// RetryAfter reads a Retry-After header: whole seconds or an HTTP date
// (1 second when absent or unreadable).
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return time.Second
}

// Do sends a request with body as JSON (none when nil) and hdr, retried by
// the retry rule, and decodes a JSON answer into out (unless nil). An
// answer >= 300 is an *Error. It answers the last answer's headers.
func (c *Client) Do(ctx context.Context, method, path string, hdr map[string]string, body, out any) (http.Header, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		h, err := c.once(ctx, method, path, hdr, data, body != nil, out)
		var ae *Error
		if attempt == MaxAttempts || !errors.As(err, &ae) || !Retryable(ae.Status, ae.Code) {
			return h, err
		}
		wait := RetryAfter(h, time.Now())
		if wait > MaxRetryWait {
			return h, fmt.Errorf("%w (not retried: the platform asks to wait %s)", err, wait)
		}
		if c.sleep(ctx, wait) != nil {
			return h, err
		}
	}
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// once sends one attempt of a request whose JSON body is data.
func (c *Client) once(ctx context.Context, method, path string, hdr map[string]string, data []byte, hasBody bool, out any) (http.Header, error) {
	var rd io.Reader
	h := hdr
	if hasBody {
		rd = bytes.NewReader(data)
		h = make(map[string]string, len(hdr)+1)
		h["Content-Type"] = "application/json"
		for k, v := range hdr {
			h[k] = v
		}
	}
	resp, err := c.Send(ctx, method, path, h, rd)
	if err != nil {
		var ae *Error
		if errors.As(err, &ae) {
			return ae.Header, err
		}
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.Header, nil
}

// Send sends one request with body as is (none when nil) and hdr and
// answers the response for the caller to read and close. An answer >= 300
// is read and returned as an *Error instead.
func (c *Client) Send(ctx context.Context, method, path string, hdr map[string]string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return nil, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		e := DecodeError(resp.StatusCode, raw)
		e.Header = resp.Header
		return nil, e
	}
	return resp, nil
}
