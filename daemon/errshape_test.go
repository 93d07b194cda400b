package daemon_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/daemon"
)

// errorBody decodes either shape: {"error":{"code","message"}} or a problem.
type errorBody struct {
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// checkShape asserts resp is an error of status in the listener's shape.
func checkShape(t *testing.T, resp *http.Response, services bool, status int, code string) errorBody {
	t.Helper()
	is := is.NewRelaxed(t)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	is.NoErr(err)
	is.Equal(resp.StatusCode, status)
	var b errorBody
	is.NoErr(json.Unmarshal(data, &b)) // the body is JSON
	if services {
		is.Equal(resp.Header.Get("Content-Type"), "application/problem+json")
		is.Equal(b.Status, status)
		is.Equal(b.Code, code)
		is.True(b.Message != "")
		is.True(b.RequestID != "")
		is.Equal(resp.Header.Get("X-Request-ID"), b.RequestID)
	} else {
		is.Equal(resp.Header.Get("Content-Type"), "application/json")
		is.True(b.Error != nil)
		if b.Error != nil {
			is.Equal(b.Error.Code, code)
			is.True(b.Error.Message != "")
		}
	}
	if t.Failed() {
		t.Logf("body: %s", data)
	}
	return b
}

// Issue 20, item 16: a handler's panic answers 500 in the listener's shape.
func TestPanicAnswersInListenerShape(t *testing.T) {
	t.Parallel()
	d := startProbe(t)
	for _, l := range []struct {
		url      string
		services bool
		code     string
	}{{d.State().BridgeURL, false, "internal"}, {d.State().ServicesURL, true, "PF-INTERNAL"}} {
		resp, err := http.Get(l.url + "/probe/panic")
		if err != nil {
			t.Fatal(err)
		}
		checkShape(t, resp, l.services, http.StatusInternalServerError, l.code)
	}
}

// rawRequest sends raw bytes and reads the response.
func rawRequest(t *testing.T, base, raw string) *http.Response {
	t.Helper()
	u, _ := url.Parse(base)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, strings.ReplaceAll(raw, "HOST", u.Host)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Issue 20, item 16: what Go's server answers before any handler (431 for
// headers over 64 KiB, 400 for a malformed request or a missing Host, 505
// for an unsupported version) comes in the listener's shape too.
func TestServerErrorsInListenerShape(t *testing.T) {
	t.Parallel()
	d := startProbe(t)
	for _, l := range []struct {
		url      string
		services bool
		tooLarge string
		bad      string
	}{{d.State().BridgeURL, false, "headers_too_large", "invalid_request"}, {d.State().ServicesURL, true, "PF-HEADERS-TOO-LARGE", "PF-BAD-REQUEST"}} {
		t.Run(l.url, func(t *testing.T) {
			for _, size := range []int{70 << 10, 200 << 10} {
				big := fmt.Sprintf("GET /health/live HTTP/1.1\r\nHost: HOST\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", size))
				b := checkShape(t, rawRequest(t, l.url, big), l.services, http.StatusRequestHeaderFieldsTooLarge, l.tooLarge)
				msg := b.Message
				if b.Error != nil {
					msg = b.Error.Message
				}
				if !strings.Contains(msg, "64 KiB") {
					t.Errorf("431 message %q", msg)
				}
			}
			checkShape(t, rawRequest(t, l.url, "GET /health/live HTTP/1.1\r\n\r\n"), l.services, http.StatusBadRequest, l.bad)              // no Host
			checkShape(t, rawRequest(t, l.url, "GET /health/live HTTP/1.1\r\nHost HOST\r\n\r\n"), l.services, http.StatusBadRequest, l.bad) // malformed header
			checkShape(t, rawRequest(t, l.url, "GET /health/live HTTP/2.5\r\nHost: HOST\r\n\r\n"), l.services, http.StatusHTTPVersionNotSupported, map[bool]string{false: "unsupported", true: "PF-UNSUPPORTED"}[l.services])
		})
	}
}

func TestBearerTokenRefusesTwoHeaders(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	r.Header.Add("Authorization", "Bearer a")
	tok, ok := daemon.BearerToken(r)
	is.True(ok)
	is.Equal(tok, "a")
	r.Header.Add("Authorization", "Bearer b")
	_, ok = daemon.BearerToken(r)
	is.True(!ok) // which one was meant is a guess
}
