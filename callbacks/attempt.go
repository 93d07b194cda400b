package callbacks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// userAgent identifies deliveries to receivers.
const userAgent = "agent-bridge-callbacks/1"

// newHTTPClient builds the delivery client: no proxy (a proxy would bypass
// the dial-time address check), the SSRF check on every connection, and
// redirects either refused or re-checked against the allow-list.
func (s *Service) newHTTPClient() *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: s.ssrf.control}
	pool := s.settings.Dispatcher.ThreadPoolSize
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   max(pool, 2),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if !s.settings.Dispatcher.FollowRedirects {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return &redirectError{ErrCodeRedirect, "stopped after 10 redirects"}
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return &redirectError{ErrCodeRedirect, "redirect to a " + req.URL.Scheme + " URL"}
			}
			if host := normalizeHost(req.URL.Hostname()); !s.reg.hostAuthorized(host) {
				return &redirectError{ErrCodeDomain, "redirect to " + host + ", which is not an authorized domain"}
			}
			// Never hand a signature to another host.
			if req.URL.Host != via[0].URL.Host {
				req.Header.Del(HeaderWebhookSig)
				req.Header.Del(s.settings.Signature.HeaderName)
				if h, ok := req.Context().Value(sigHeaderKey{}).(string); ok {
					req.Header.Del(h)
				}
			}
			return nil
		},
	}
}

// sigHeaderKey carries a configuration's signature header name to
// CheckRedirect through the request context (redirects inherit it).
type sigHeaderKey struct{}

// redirectError refuses a redirect hop; code is the attempt's error code.
type redirectError struct{ code, msg string }

func (e *redirectError) Error() string { return e.msg }

// attempt makes one delivery attempt of j to c and returns its outcome, the
// breaker's verdict and how long the call took. A nil outcome means the
// service is shutting down: the row stays open and is retried after restart.
func (s *Service) attempt(ctx context.Context, j *job, c *Configuration) (*outcome, verdict, time.Duration) {
	o := &outcome{job: j, maxAttempts: c.maxAttempts(&s.settings)}
	payload := j.payload
	if payload == nil {
		p, err := s.payloadBySeq(ctx, j.eventSeq, j.eventID)
		if err != nil {
			if ctx.Err() != nil {
				return nil, verdictIgnore, 0
			}
			o.state, o.finished = StateFailedPermanent, s.nowMs()
			o.err = &ExecutionError{Code: ErrCodeEventExpired, Message: err.Error()}
			if ErrorCode(err) == EInternal {
				o.err.Code = ErrCodeRequest
			}
			return o, verdictIgnore, 0
		}
		payload = p
	}

	started := s.nowMs()
	rctx, cancel := context.WithTimeout(ctx, c.timeout(&s.settings))
	defer cancel()
	rctx = context.WithValue(rctx, sigHeaderKey{}, c.header(&s.settings))
	req, err := http.NewRequestWithContext(rctx, c.HTTPMethod, c.URL, bytes.NewReader(payload))
	if err != nil {
		o.state, o.finished = StateFailedPermanent, s.nowMs()
		o.err = &ExecutionError{Code: ErrCodeRequest, Message: "cannot build the request: " + err.Error()}
		return o, verdictIgnore, 0
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	h.Set(HeaderEventID, j.eventID)
	h.Set(HeaderEventType, j.eventType)
	h.Set(HeaderDeliveryID, j.deliveryID)
	h.Set(HeaderDeliveryAttempt, strconv.Itoa(j.attempt))
	signRequest(h, &s.settings, c, j.eventID, started, payload)
	o.req = &ExecutionRequest{Method: c.HTTPMethod, URL: c.URL, Headers: flatten(h), BodyBytes: len(payload)}
	o.started = started

	t0 := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		took := time.Since(t0)
		o.finished = s.nowMs()
		if ctx.Err() != nil {
			return nil, verdictIgnore, took
		}
		o, v := s.failed(o, j, classifyError(err, rctx), nil)
		return o, v, took
	}
	excerpt, truncated := readExcerpt(resp.Body)
	resp.Body.Close()
	took := time.Since(t0)
	o.finished = s.nowMs()
	o.resp = &ExecutionResponse{Status: resp.StatusCode, BodyExcerpt: excerpt, BodyTruncated: truncated}
	code := resp.StatusCode
	switch {
	case code >= 200 && code <= 299:
		o.state = StateSucceeded
		return o, verdictSuccess, took
	case code == http.StatusGone:
		o.state = StateFailedPermanent
		o.err = &ExecutionError{Code: ErrCodeGone, Message: "the receiver answered 410 Gone: the configuration is disabled"}
		o.disable = "the receiver answered 410 Gone"
		return o, verdictIgnore, took
	case code >= 300 && code <= 399:
		o.state = StateFailedPermanent
		msg := fmt.Sprintf("the receiver answered %d", code)
		if !s.settings.Dispatcher.FollowRedirects {
			msg += "; redirects are not followed (dispatcher.follow-redirects is false)"
		}
		if loc := resp.Header.Get("Location"); loc != "" {
			msg += "; Location: " + truncate(loc, 200)
		}
		o.err = &ExecutionError{Code: ErrCodeRedirect, Message: msg}
		return o, verdictIgnore, took
	case transientStatus(code):
		o, v := s.failed(o, j, &ExecutionError{Code: ErrCodeHTTPStatus, Message: fmt.Sprintf("the receiver answered %d", code)}, resp.Header)
		return o, v, took
	default:
		o.state = StateFailedPermanent
		o.err = &ExecutionError{Code: ErrCodeHTTPStatus, Message: fmt.Sprintf("the receiver answered %d, which is not retried", code)}
		return o, verdictIgnore, took
	}
}

// failed completes an outcome whose error may be retried: FAILED_RETRYING
// with the next attempt scheduled, or FAILED_PERMANENT when attempts are
// used up or the error is permanent.
func (s *Service) failed(o *outcome, j *job, e *ExecutionError, h http.Header) (*outcome, verdict) {
	o.err = e
	switch e.Code {
	case ErrCodeSSRF, ErrCodeDomain, ErrCodeRequest, ErrCodeRedirect:
		// Policy refusals: permanent, and no sign of the endpoint's health.
		o.state = StateFailedPermanent
		return o, verdictIgnore
	}
	if j.attempt >= o.maxAttempts {
		o.state = StateFailedPermanent
		o.err.Message += fmt.Sprintf("; all %d attempts used", o.maxAttempts)
		return o, verdictFailure
	}
	c := s.reg.config(j.configID)
	initial := ms(s.settings.Retry.InitialDelayMs)
	if c != nil {
		initial = c.initialDelay(&s.settings)
	}
	maxDelay := max(ms(s.settings.Retry.MaxDelayMs), initial)
	delay := backoff(j.attempt, initial, maxDelay, s.settings.Retry.Multiplier, s.rnd)
	if h != nil {
		ra, ok := retryAfter(h, o.finished)
		delay = nextDelay(delay, ra, ok, maxDelay)
	}
	next := *j
	next.execID = newID()
	next.attempt = j.attempt + 1
	next.maxAttempts = o.maxAttempts
	next.due = o.finished.Add(delay)
	next.held = false
	if delay > payloadKeepDelay {
		next.payload = nil // read back when due: a backlog of retries stays small in memory
	}
	o.next = &next
	o.state = StateFailedRetrying
	return o, verdictFailure
}

// payloadKeepDelay: retries due sooner keep their payload in memory.
const payloadKeepDelay = 5 * time.Second

// classifyError turns a transport error into an attempt error.
func classifyError(err error, rctx context.Context) *ExecutionError {
	var se *ssrfError
	var re *redirectError
	switch {
	case errors.As(err, &se):
		return &ExecutionError{Code: ErrCodeSSRF, Message: se.Error()}
	case errors.As(err, &re):
		return &ExecutionError{Code: re.code, Message: re.msg}
	case errors.Is(rctx.Err(), context.DeadlineExceeded), isTimeout(err):
		return &ExecutionError{Code: ErrCodeTimeout, Message: "no answer within the timeout"}
	}
	return &ExecutionError{Code: ErrCodeConnection, Message: connMessage(err)}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// connMessage strips the URL from a transport error (it is recorded apart).
func connMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return truncate(err.Error(), 500)
}

// readExcerpt keeps the first bytes of a body and drains a bounded rest so
// the connection can be reused.
func readExcerpt(r io.Reader) (string, bool) {
	buf := make([]byte, responseExcerptBytes+1)
	n, _ := io.ReadFull(r, buf)
	truncated := n > responseExcerptBytes
	if truncated {
		n = responseExcerptBytes
		_, _ = io.Copy(io.Discard, io.LimitReader(r, 64<<10))
	}
	b := buf[:n]
	for !utf8.Valid(b) && len(b) > 0 && truncated {
		b = b[:len(b)-1] // do not cut a character in half
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), truncated
}

// flatten copies the headers that were sent; none holds a secret (the
// signature is derived from the secret but does not reveal it).
func flatten(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = strings.Join(v, ", ")
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func itoa(n int) string { return strconv.Itoa(n) }
