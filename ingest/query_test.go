package ingest

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/matryer/is"
)

// Issue 20, item 16: bad query values of the management API answer 400
// problems instead of an empty 200.
func TestBadQueryValuesAnswer400(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	for _, path := range []string{
		"/api/v1/webhook-events?status=bogus",
		"/api/v1/webhook-events?status=verified&status=failed",
		"/api/v1/webhook-events?stauts=verified",
		"/api/v1/webhook-events?limit=0",
		"/api/v1/webhook-events?provider=%ff",
		"/api/v1/webhook-dlq?pending=maybe",
		"/api/v1/webhook-dlq?provider=a&provider=b",
		"/api/v1/webhook-dlq?status=failed",
		"/api/v1/webhook-events/stream?providers=github",
	} {
		t.Run(path, func(t *testing.T) {
			p := readProblem(t, h.do(http.MethodGet, path, nil, "Authorization", "Bearer "+testOwnerToken), http.StatusBadRequest)
			is.New(t).Equal(p.Code, "WH-INVALID-PARAMETER")
		})
	}
	for _, path := range []string{"/api/v1/webhook-events?status=failed&provider=github&limit=5", "/api/v1/webhook-dlq?pending=true&provider=github"} {
		r := h.do(http.MethodGet, path, nil, "Authorization", "Bearer "+testOwnerToken)
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, r.StatusCode)
		}
	}
}

// levelCounter counts log records at ERROR and above.
type levelCounter struct {
	mu     sync.Mutex
	errors []string
}

func (c *levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *levelCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		c.mu.Lock()
		c.errors = append(c.errors, r.Message)
		c.mu.Unlock()
	}
	return nil
}
func (c *levelCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *levelCounter) WithGroup(string) slog.Handler      { return c }

// Issue 20, item 16: a client's mistakes (every 4xx the ingest surface
// answers) are not logged at ERROR.
func TestClientErrorsNotLoggedAtError(t *testing.T) {
	t.Parallel()
	lc := &levelCounter{}
	var fb *flakyBroker
	h := newHarness(t, harnessOpt{logger: slog.New(lc), wrap: func(b brokerT) brokerT {
		fb = &flakyBroker{Broker: b, match: notDLQ}
		return fb
	}})
	owner := []string{"Authorization", "Bearer " + testOwnerToken}
	for _, c := range []struct {
		method, path string
		body         []byte
		kv           []string
		status       int
	}{
		{"POST", "/api/v1/webhook/Bad_Name", []byte(`{}`), []string{"Content-Type", jsonCT}, 400},
		{"PUT", "/api/v1/webhook/github", []byte(`{}`), []string{"Content-Type", jsonCT}, 405},
		{"POST", "/api/v1/webhook/github", []byte(`{}`), []string{"Content-Type", "text/plain"}, 415},
		{"POST", "/api/v1/webhook/github", []byte(`{`), []string{"Content-Type", jsonCT}, 400},
		{"POST", "/api/v1/webhook/github", nil, []string{"Content-Type", jsonCT}, 400},
		{"POST", "/api/v1/webhook/github", make([]byte, 1<<20+1), []string{"Content-Type", jsonCT}, 413},
		{"GET", "/api/v1/webhook-events", nil, nil, 401},
		{"GET", "/api/v1/webhook-events?status=bogus", nil, owner, 400},
		{"GET", "/api/v1/webhook-dlq?cursor=forged", nil, owner, 400},
		{"GET", "/api/v1/webhook-dlq/01a20cad-4bea-7e4e-9a70-c76c2f3250b3", nil, owner, 404},
	} {
		r := h.do(c.method, c.path, c.body, c.kv...)
		r.Body.Close()
		if r.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, r.StatusCode, c.status)
		}
	}
	// An event the broker refuses as too large answers 422: the client's too.
	fb.mu.Lock()
	fb.fails, fb.err = 100, errTooLarge
	fb.mu.Unlock()
	readProblem(t, h.post("github", []byte(`{}`), "Content-Type", jsonCT), http.StatusUnprocessableEntity)

	lc.mu.Lock()
	defer lc.mu.Unlock()
	if len(lc.errors) > 0 {
		t.Fatalf("client errors logged at ERROR: %q", lc.errors)
	}
}

// Issue 20, item 7: two Authorization headers are refused, not resolved by
// taking one of them.
func TestTwoAuthorizationHeadersRefused(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, harnessOpt{})
	req, err := http.NewRequest(http.MethodGet, h.srv.URL+"/api/v1/webhook-events", nil)
	is.NoErr(err)
	req.Header.Add("Authorization", "Bearer "+testOwnerToken)
	req.Header.Add("Authorization", "Bearer someone-else")
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	p := readProblem(t, resp, http.StatusBadRequest)
	is.Equal(p.Code, "WH-INVALID-HEADER")
}
