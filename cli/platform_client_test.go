package cli

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
}

func (f *refusingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, string(b))
	f.keys = append(f.keys, r.Header.Get("Idempotency-Key"))
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

func TestClientRetryRule(t *testing.T) {
	for _, c := range []struct {
		name     string
		answers  [][3]string
		attempts int
		ok       bool
		code     string
	}{
		{"operation capacity then admitted", [][3]string{{"429", "PF-OPERATION-CAPACITY", "0"}, {"429", "PF-REQUEST-CAPACITY", "0"}}, 3, true, ""},
		{"compatibility then admitted", [][3]string{{"503", "PF-COMPATIBILITY", "0"}}, 2, true, ""},
		{"four attempts in all", [][3]string{{"503", "PF-COMPATIBILITY", "0"}, {"503", "PF-COMPATIBILITY", "0"},
			{"503", "PF-COMPATIBILITY", "0"}, {"503", "PF-COMPATIBILITY", "0"}, {"503", "PF-COMPATIBILITY", "0"}}, 4, false, "PF-COMPATIBILITY"},
		{"other 429 codes are not retried", [][3]string{{"429", "PF-STEPTEST-BUSY", "0"}}, 1, false, "PF-STEPTEST-BUSY"},
		{"other 503 codes are not retried", [][3]string{{"503", "PF-STUDIO-BUSY", "0"}}, 1, false, "PF-STUDIO-BUSY"},
		{"server errors are not retried", [][3]string{{"500", "PF-INTERNAL", ""}}, 1, false, "PF-INTERNAL"},
		{"conflicts are not retried", [][3]string{{"409", "PF-IDEMPOTENCY-CONFLICT", "0"}}, 1, false, "PF-IDEMPOTENCY-CONFLICT"},
		{"a wait over a minute is not waited for", [][3]string{{"503", "PF-COMPATIBILITY", "61"}}, 1, false, "PF-COMPATIBILITY"},
		{"an HTTP date in the past is now", [][3]string{{"429", "PF-OPERATION-CAPACITY", "Thu, 01 Jan 1970 00:00:00 GMT"}}, 2, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &refusingServer{answers: c.answers}
			srv := httptest.NewServer(f)
			defer srv.Close()
			var out struct{ ID string }
			_, err := platformDo(context.Background(), srv.Client(), srv.URL, "POST", "/runs", "tok",
				map[string]string{"Idempotency-Key": "k-1"}, map[string]any{"b": 1, "a": []int{1, 2}}, &out)
			if len(f.bodies) != c.attempts {
				t.Fatalf("%d attempts, want %d", len(f.bodies), c.attempts)
			}
			for i := range f.bodies {
				if f.bodies[i] != f.bodies[0] || f.keys[i] != "k-1" {
					t.Fatalf("attempt %d sent %q with key %q; the first %q", i+1, f.bodies[i], f.keys[i], f.bodies[0])
				}
			}
			if c.ok {
				if err != nil || out.ID != "r-1" {
					t.Fatalf("err %v, out %+v", err, out)
				}
				return
			}
			var ae *apiError
			if !errors.As(err, &ae) || ae.Code != c.code {
				t.Fatalf("err %v, want %s", err, c.code)
			}
		})
	}
}

func TestClientRetryHonoursRetryAfter(t *testing.T) {
	f := &refusingServer{answers: [][3]string{{"429", "PF-REQUEST-CAPACITY", "1"}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	start := time.Now()
	if _, err := platformDo(context.Background(), srv.Client(), srv.URL, "POST", "/x", "", nil, map[string]int{"a": 1}, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("retried after %s, before Retry-After: 1", d)
	}
	// A cancelled context stops the wait.
	f = &refusingServer{answers: [][3]string{{"503", "PF-COMPATIBILITY", "30"}}}
	srv2 := httptest.NewServer(f)
	defer srv2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := platformDo(ctx, srv2.Client(), srv2.URL, "POST", "/x", "", nil, map[string]int{"a": 1}, nil)
	if err == nil || !strings.Contains(err.Error(), "PF-COMPATIBILITY") || len(f.bodies) != 1 {
		t.Fatalf("err %v after %d attempts", err, len(f.bodies))
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{"": time.Second, "0": 0, "7": 7 * time.Second, "x": time.Second, "-3": time.Second,
		now.Add(5 * time.Second).Format(http.TimeFormat): 5 * time.Second, now.Add(-time.Hour).Format(http.TimeFormat): 0} {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := retryAfter(h, now); got != want {
			t.Fatalf("Retry-After %q: %s, want %s", v, got, want)
		}
	}
}
