package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/kernel"
)

// adapterHTTP is the built-in http adapter.
const adapterHTTP = "http"

// Limits and identity of the http adapter's requests.
const (
	// maxHTTPResponseBytes bounds the body read from a successful response
	// (the kernel's payload limit): a larger body fails the task.
	maxHTTPResponseBytes = kernel.MaxValueBytes
	// httpExcerptBytes is how much of an error response's body its task
	// error quotes.
	httpExcerptBytes = 200
	// maxHTTPResponseHeaderBytes bounds the response headers.
	maxHTTPResponseHeaderBytes = 64 << 10
	httpUserAgent              = "agent-bridge-platform/1 (workflow http adapter)"
)

// Task error codes of the http adapter (besides HTTP_<status>).
const (
	codeConfigInvalid    = "CONFIG_INVALID"
	codeConnectionFailed = "CONNECTION_FAILED"
	codeResponseTooLarge = "RESPONSE_TOO_LARGE"
	codeExecutorError    = "EXECUTOR_ERROR"
)

// httpMethods are the methods the http adapter's config may name.
var httpMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead}

// httpConfig is the evaluated config of an http binding.
type httpConfig struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Query   map[string]string `json:"query"`
	Body    json.RawMessage   `json:"body"`
}

// httpShape says how a successful response becomes the task output: the
// response body itself (bodyOnly) or the envelope {status, headers, body};
// check answers whether the kernel accepts an output (nil: no check).
type httpShape struct {
	bodyOnly bool
	check    func(json.RawMessage) error
}

// envelopeFields are the envelope's properties: an output schema naming
// any of them describes the envelope, any other output schema the body.
var envelopeFields = []string{"status", "headers", "body"}

// performHTTP makes the http adapter's request of task t. The output
// shape comes from the pinned output schema of the task's step, read from
// the run's program, so that the output sent as task_completed is one the
// kernel accepts: a response it would refuse fails the task (not
// retryable) with OUTPUT_INVALID instead.
func (s *Service) performHTTP(ctx context.Context, t *kernel.TaskSpec) outcome {
	shape, err := s.httpShape(ctx, t)
	if errors.Is(err, errNotFound) {
		// Withdrawn before it started: the outcome is ignored.
		return outcome{Err: &kernel.TaskError{Code: codeExecutorError, Message: "the task was withdrawn"}}
	}
	if err != nil {
		// Nothing was sent: the retry policy applies.
		return outcome{Err: &kernel.TaskError{Code: codeExecutorError, Message: "cannot prepare the request: " + err.Error()},
			Retryable: true}
	}
	return callHTTP(ctx, s.http, t, shape)
}

// httpShape reads the output shape of t's step from the program of the
// run that issued t (through its dispatch row).
func (s *Service) httpShape(ctx context.Context, t *kernel.TaskSpec) (httpShape, error) {
	project, version, err := dispatchProgram(ctx, s.db.Reader(), t.TaskID)
	if err != nil {
		return httpShape{}, err
	}
	p, err := s.program(ctx, s.db.Reader(), project, version)
	if err != nil {
		return httpShape{}, err
	}
	names, declared := p.p.SpecOutputProperties(t)
	spec := *t
	return httpShape{
		bodyOnly: declared && !slices.ContainsFunc(names, func(n string) bool { return slices.Contains(envelopeFields, n) }),
		check: func(out json.RawMessage) error {
			err := p.p.CheckSpecOutput(&spec, out)
			var ke *kernel.Error
			if errors.As(err, &ke) && ke.Err != nil {
				return fmt.Errorf("%s: %w", ke.Msg, ke.Err)
			}
			return err
		},
	}, nil
}

// defaultHTTPClient makes the http adapter's requests: no ambient proxy
// (the daemon calls the user's own services, often on loopback), no
// redirects followed, bounded response headers. The attempt deadline in
// the request context is the timeout.
func defaultHTTPClient() *http.Client {
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxHTTPResponseHeaderBytes,
	}
	return &http.Client{Transport: tr, CheckRedirect: noRedirects}
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// callHTTP makes the request of t with client and maps the response
// (docs/workflow-language.md, "The http adapter"): 2xx completes the task, 408, 425, 429 and 5xx fail it retryably, other
// statuses (3xx included: redirects are never followed) fail it for good;
// a connection that failed before the request was written fails it
// retryably, and a call that broke off after (timeout, reset) has an
// unknown outcome.
func callHTTP(ctx context.Context, client *http.Client, t *kernel.TaskSpec, shape httpShape) outcome {
	req, err := newHTTPRequest(ctx, t)
	if err != nil {
		return outcome{Err: &kernel.TaskError{Code: codeConfigInvalid, Message: err.Error()}}
	}
	c := *client
	c.CheckRedirect = noRedirects
	var wrote atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteHeaders: func() { wrote.Store(true) },
	}))
	target := redactURL(req.URL)
	start := time.Now()
	took := func() string { return fmt.Sprintf("%d ms", time.Since(start).Milliseconds()) }
	resp, err := c.Do(req)
	if err != nil {
		msg := transportMessage(err)
		if !wrote.Load() {
			return outcome{Err: &kernel.TaskError{Code: codeConnectionFailed, Message: "the request was not sent: " + msg}, Retryable: true,
				Note: fmt.Sprintf("%s %s → not sent after %s: %s", req.Method, target, took(), msg)}
		}
		return outcome{Unknown: true, Note: fmt.Sprintf("%s %s → %s after %s; the outcome is unknown", req.Method, target, brokeOff(ctx, err), took())}
	}
	defer resp.Body.Close()
	code := resp.StatusCode
	if code < 200 || code > 299 {
		excerpt := readExcerpt(resp.Body)
		o := outcome{Err: &kernel.TaskError{Code: fmt.Sprintf("HTTP_%d", code), Message: statusMessage(resp, excerpt)},
			Retryable: retryableStatus(code), Note: fmt.Sprintf("%s %s → %d in %s", req.Method, target, code, took())}
		if o.Retryable {
			o.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		if code >= 300 && code <= 399 {
			o.Err.Message += "; redirects are not followed"
			if loc, err := resp.Location(); err == nil {
				o.Err.Message += " (Location: " + redactURL(loc) + ")"
			}
		}
		return o
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPResponseBytes+1))
	note := fmt.Sprintf("%s %s → %d in %s", req.Method, target, code, took())
	if err != nil {
		// The server answered 2xx, so the call took effect, but its output
		// was lost.
		return outcome{Unknown: true, Note: note + fmt.Sprintf("; reading the body failed (%s): the outcome is unknown", brokeOff(ctx, err))}
	}
	if len(body) > maxHTTPResponseBytes {
		return outcome{Err: &kernel.TaskError{Code: codeResponseTooLarge,
			Message: fmt.Sprintf("the response body is over the %d byte limit", maxHTTPResponseBytes)}, Note: note}
	}
	out, err := responseOutput(resp, body, shape.bodyOnly)
	if err == nil && len(out) > kernel.MaxValueBytes {
		return outcome{Err: &kernel.TaskError{Code: codeResponseTooLarge,
			Message: fmt.Sprintf("the output of %d bytes is over the %d byte limit", len(out), kernel.MaxValueBytes)}, Note: note}
	}
	if err == nil && shape.check != nil {
		err = shape.check(out)
	}
	if err != nil {
		return outcome{Err: &kernel.TaskError{Code: kernel.ErrCodeOutputInvalid, Message: err.Error()}, Note: note}
	}
	return outcome{Output: out, Note: note}
}

// newHTTPRequest evaluates t's binding config and builds its request. The
// connection variable is an empty map: actions bound to the built-in
// adapter have no connections yet.
func newHTTPRequest(ctx context.Context, t *kernel.TaskSpec) (*http.Request, error) {
	raw, err := kernel.EvalBindingConfig(t.Binding, t.Input, map[string]any{})
	if err != nil {
		return nil, fmt.Errorf("evaluate the http config: %w", err)
	}
	var cfg httpConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("the http config is not method, url, headers, query and body: %w", err)
	}
	if !slices.Contains(httpMethods, cfg.Method) {
		return nil, fmt.Errorf("the http config's method %q is not one of %s", cfg.Method, strings.Join(httpMethods, ", "))
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, errors.New("the http config's url is not a URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the http config's url %s is not an absolute http or https URL", redactURL(u))
	}
	u.Fragment, u.RawFragment = "", ""
	if len(cfg.Query) > 0 {
		q := u.Query()
		for k, v := range cfg.Query {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
	}
	var body io.Reader
	contentType := ""
	if len(cfg.Body) > 0 && string(cfg.Body) != "null" {
		var text string
		if json.Unmarshal(cfg.Body, &text) == nil {
			body, contentType = strings.NewReader(text), "text/plain; charset=utf-8"
		} else {
			body, contentType = bytes.NewReader(cfg.Body), "application/json"
		}
	}
	req, err := http.NewRequestWithContext(ctx, cfg.Method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("build the request: %s", transportMessage(err))
	}
	for k, v := range cfg.Headers {
		if !validHeaderName(k) {
			return nil, fmt.Errorf("the http config's header name %q is not valid", k)
		}
		if !validHeaderValue(v) {
			return nil, fmt.Errorf("the http config's header %s has a value with control characters", k)
		}
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	for k, v := range map[string]string{"Idempotency-Key": t.IdempotencyKey, "User-Agent": httpUserAgent, "Content-Type": contentType} {
		if v != "" && req.Header.Get(k) == "" {
			req.Header.Set(k, v)
		}
	}
	return req, nil
}

// responseOutput maps a successful response to the task output: the
// envelope {status, headers, body}, or the body alone. The body is its
// JSON value when the response says it is JSON and it parses, null when
// empty, else its text.
func responseOutput(resp *http.Response, body []byte, bodyOnly bool) (json.RawMessage, error) {
	var value json.RawMessage
	switch {
	case len(bytes.TrimSpace(body)) == 0:
		value = json.RawMessage("null")
	case isJSON(resp.Header.Get("Content-Type")) && json.Valid(body):
		value = json.RawMessage(bytes.TrimSpace(body))
	default:
		text, err := json.Marshal(strings.ToValidUTF8(string(body), "\uFFFD"))
		if err != nil {
			return nil, err
		}
		value = text
	}
	if bodyOnly {
		return value, nil
	}
	headers := make(map[string]string, len(resp.Header))
	for k, v := range resp.Header {
		if len(v) > 0 {
			headers[strings.ToLower(k)] = v[0]
		}
	}
	out, err := json.Marshal(struct {
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
		Body    json.RawMessage   `json:"body"`
	}{resp.StatusCode, headers, value})
	return out, err
}

// isJSON reports whether a Content-Type is application/json or +json.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// retryAfter reads a Retry-After value (delay seconds or an HTTP date)
// as a wait from now; 0 when absent, malformed or past, and at most
// maxRetryAfter (the retry policy caps it further).
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		d = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	}
	return max(0, min(d, maxRetryAfter))
}

// maxRetryAfter bounds the wait a Retry-After header can ask for.
const maxRetryAfter = 24 * time.Hour

// retryableStatus: statuses that say "try again later".
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return code >= 500 && code <= 599
}

// statusMessage says what the server answered, with an excerpt of its
// body; never its headers (they may carry credentials or cookies).
func statusMessage(resp *http.Response, excerpt string) string {
	msg := "the server answered " + resp.Status
	if excerpt != "" {
		msg += ": " + excerpt
	}
	return msg
}

// readExcerpt reads the start of a body as one line of valid UTF-8.
func readExcerpt(r io.Reader) string {
	buf, _ := io.ReadAll(io.LimitReader(r, httpExcerptBytes+1))
	cut := len(buf) > httpExcerptBytes
	if cut {
		buf = buf[:httpExcerptBytes]
		for len(buf) > 0 && !utf8.Valid(buf) {
			buf = buf[:len(buf)-1] // do not cut a character in half
		}
	}
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(buf), "\uFFFD")), " ")
	if cut {
		s += "…"
	}
	return s
}

// redactURL is u for logs and messages: scheme, host and path, without
// credentials, query or fragment.
func redactURL(u *url.URL) string {
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return r.String()
}

// transportMessage is a transport error without the URL (its query may
// hold secrets).
func transportMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return strings.ToValidUTF8(msg, "\uFFFD")
}

// brokeOff says why a call that may have been received ended.
func brokeOff(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "no answer within the attempt's timeout"
	case ctx.Err() != nil:
		return "cancelled"
	}
	return "the connection broke off: " + transportMessage(err)
}

// validHeaderName: an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validHeaderValue: no control characters other than tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
