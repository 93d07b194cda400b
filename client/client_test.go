package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// refusingServer answers the first len(answers) requests with them
// (status, code, Retry-After), then 201, and records every request.
type refusingServer struct {
	mu      sync.Mutex
	answers [][3]string
	bodies  []string
	keys    []string
	auth    []string
}

func (f *refusingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, string(b))
	f.keys = append(f.keys, r.Header.Get("Idempotency-Key"))
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	if n < len(f.answers) {
		a := f.answers[n]
		if a[2] != "" {
			w.Header().Set("Retry-After", a[2])
		}
		w.Header().Set("Content-Type", "application/problem+json")
		code := map[string]int{"429": 429, "503": 503, "500": 500, "409": 409}[a[0]]
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"status":` + a[0] + `,"code":"` + a[1] + `","message":"not now","diagnostics":[]}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(201)
	_, _ = w.Write([]byte(`{"id":"r-1"}`))
}

// recordSleeps is a Sleep that records the waits instead of waiting.
func recordSleeps(waits *[]time.Duration) func(context.Context, time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return ctx.Err()
	}
}

func TestRetryRule(t *testing.T) {
	t.Parallel()
	capacity := [3]string{"429", "PF-OPERATION-CAPACITY", "0"}
	compat := [3]string{"503", "PF-COMPATIBILITY", "0"}
	for _, c := range []struct {
		name     string
		answers  [][3]string
		attempts int
		ok       bool
		code     string
	}{
		{"operation capacity then admitted", [][3]string{capacity, {"429", "PF-REQUEST-CAPACITY", "0"}}, 3, true, ""},
		{"compatibility then admitted", [][3]string{compat}, 2, true, ""},
		{"three refusals then admitted on the fourth attempt", [][3]string{compat, capacity, compat}, 4, true, ""},
		{"four refusals: four attempts in all", [][3]string{compat, compat, compat, compat}, 4, false, "PF-COMPATIBILITY"},
		{"five refusals: still four attempts", [][3]string{compat, compat, compat, compat, compat}, 4, false, "PF-COMPATIBILITY"},
		{"other 429 codes are not retried", [][3]string{{"429", "PF-STEPTEST-BUSY", "0"}}, 1, false, "PF-STEPTEST-BUSY"},
		{"other 503 codes are not retried", [][3]string{{"503", "PF-STUDIO-BUSY", "0"}}, 1, false, "PF-STUDIO-BUSY"},
		{"server errors are not retried", [][3]string{{"500", "PF-INTERNAL", ""}}, 1, false, "PF-INTERNAL"},
		{"conflicts are not retried", [][3]string{{"409", "PF-IDEMPOTENCY-CONFLICT", "0"}}, 1, false, "PF-IDEMPOTENCY-CONFLICT"},
		{"a wait of a minute is waited for", [][3]string{{"503", "PF-COMPATIBILITY", "60"}}, 2, true, ""},
		{"a wait over a minute is not waited for", [][3]string{{"503", "PF-COMPATIBILITY", "61"}}, 1, false, "PF-COMPATIBILITY"},
		{"an HTTP date in the past is now", [][3]string{{"429", "PF-OPERATION-CAPACITY", "Thu, 01 Jan 1970 00:00:00 GMT"}}, 2, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := &refusingServer{answers: c.answers}
			srv := httptest.NewServer(f)
			defer srv.Close()
			var waits []time.Duration
			cl := New(srv.URL, "tok", srv.Client())
			cl.Sleep = recordSleeps(&waits)
			var out struct{ ID string }
			_, err := cl.Do(context.Background(), "POST", "/runs",
				map[string]string{"Idempotency-Key": "k-1"}, map[string]any{"b": 1, "a": []int{1, 2}}, &out)
			if len(f.bodies) != c.attempts || len(waits) != c.attempts-1 {
				t.Fatalf("%d attempts and %d waits, want %d attempts", len(f.bodies), len(waits), c.attempts)
			}
			for i := range f.bodies {
				if f.bodies[i] != f.bodies[0] || f.keys[i] != "k-1" || f.auth[i] != "Bearer tok" {
					t.Fatalf("attempt %d sent %q with key %q, %q; the first %q", i+1, f.bodies[i], f.keys[i], f.auth[i], f.bodies[0])
				}
			}
			if c.ok {
				if err != nil || out.ID != "r-1" {
					t.Fatalf("err %v, out %+v", err, out)
				}
				return
			}
			var ae *Error
			if !errors.As(err, &ae) || ae.Code != c.code {
				t.Fatalf("err %v, want %s", err, c.code)
			}
		})
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	f := &refusingServer{answers: [][3]string{{"429", "PF-REQUEST-CAPACITY", "1"}, {"503", "PF-COMPATIBILITY", "7"}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var waits []time.Duration
	cl := New(srv.URL, "", srv.Client())
	cl.Sleep = recordSleeps(&waits)
	if _, err := cl.Do(context.Background(), "POST", "/x", nil, map[string]int{"a": 1}, nil); err != nil {
		t.Fatal(err)
	}
	if len(waits) != 2 || waits[0] != time.Second || waits[1] != 7*time.Second {
		t.Fatalf("waited %v, want [1s 7s]", waits)
	}
	if f.auth[0] != "" {
		t.Fatalf("sent Authorization %q without a token", f.auth[0])
	}
	// A context cancelled during the wait ends it: Do answers the refusal.
	f = &refusingServer{answers: [][3]string{{"503", "PF-COMPATIBILITY", "30"}}}
	srv2 := httptest.NewServer(f)
	defer srv2.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl = New(srv2.URL, "", srv2.Client())
	cl.Sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return (&Client{}).sleep(ctx, d) // the real wait, with the context cancelled
	}
	start := time.Now()
	_, err := cl.Do(ctx, "POST", "/x", nil, map[string]int{"a": 1}, nil)
	if err == nil || !strings.Contains(err.Error(), "PF-COMPATIBILITY") || len(f.bodies) != 1 || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %d attempts", err, len(f.bodies))
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{"": time.Second, "0": 0, "7": 7 * time.Second, "x": time.Second, "-3": time.Second,
		now.Add(5 * time.Second).Format(http.TimeFormat): 5 * time.Second, now.Add(-time.Hour).Format(http.TimeFormat): 0} {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := RetryAfter(h, now); got != want {
			t.Fatalf("Retry-After %q: %s, want %s", v, got, want)
		}
	}
}

func TestDecodeError(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, body, want string
	}{
		{"bridge shape", `{"error":{"code":"not_found","message":"no job j-1"}}`, "no job j-1 (not_found, HTTP 404)"},
		{"problem with diagnostics", `{"status":404,"code":"PF-VALIDATION","message":"bad input","diagnostics":[` +
			`{"code":"x","message":"want a string","path":"/a"},{"code":"y","message":"too long","parameter":"limit"},` +
			`{"code":"z","message":"an extra word"},{"code":"w","message":"bad input"}]}`,
			"bad input; /a: want a string; limit: too long; an extra word (PF-VALIDATION, HTTP 404)"},
		{"problem with field diagnostics", `{"status":404,"code":"FA-VALIDATION","message":"mode: unknown","diagnostics":[{"field":"mode","message":"mode: unknown"}]}`,
			"mode: unknown (FA-VALIDATION, HTTP 404)"},
		{"message without code", `{"message":"gone"}`, "gone (HTTP 404)"},
		{"title and detail", `{"title":"Not Found","detail":"no such route"}`, "Not Found: no such route (HTTP 404)"},
		{"text", "404 page not found\n", "404 page not found (HTTP 404)"},
		{"long text is cut", strings.Repeat("x", 300), strings.Repeat("x", 200) + " (HTTP 404)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := DecodeError(404, []byte(c.body)).Error(); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestSendErrorShapes: both error shapes come back from a server as *Error
// with the answer's status and headers, and success answers are readable.
func TestSendErrorShapes(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bridge":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":{"code":"conflict","message":"the job has ended"}}`))
		case "/problem":
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"status":429,"code":"PF-STEPTEST-BUSY","message":"busy","diagnostics":[]}`))
		default:
			_, _ = w.Write([]byte("raw bytes"))
		}
	}))
	defer srv.Close()
	cl := New(srv.URL, "t", srv.Client())
	var ae *Error
	_, err := cl.Do(context.Background(), http.MethodPost, "/bridge", nil, map[string]string{}, nil)
	if !errors.As(err, &ae) || ae.Status != 409 || ae.Code != "conflict" || ae.Message != "the job has ended" {
		t.Fatalf("bridge shape: %v", err)
	}
	_, err = cl.Send(context.Background(), http.MethodGet, "/problem", nil, nil)
	if !errors.As(err, &ae) || ae.Status != 429 || ae.Code != "PF-STEPTEST-BUSY" || ae.Header.Get("Retry-After") != "3" {
		t.Fatalf("problem shape: %v", err)
	}
	resp, err := cl.Streaming().Send(context.Background(), http.MethodGet, "/raw", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "raw bytes" {
		t.Fatalf("got %q", b)
	}
}
