package wire_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestRunEventsReachCallbacks: the platform's lifecycle events, relayed
// from its outbox to the broker topic platform.runs, are delivered by the
// callbacks service to a configuration subscribed to them.
func TestRunEventsReachCallbacks(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newDaemonEnv(t, "platform:\n  callbacks:\n    ssrf:\n      allow-loopback: true\n")
	var mu sync.Mutex
	var got []map[string]any
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev map[string]any
		if json.Unmarshal(body, &ev) == nil {
			ev["header-type"] = r.Header.Get("X-Platform-Event-Type")
			mu.Lock()
			got = append(got, ev)
			mu.Unlock()
		}
		w.WriteHeader(200)
	}))
	defer rc.Close()

	e.must(201, e.do("POST", e.services+"/api/v1/authorized-domains", e.owner, map[string]any{"domain": "localhost"}))
	e.must(201, e.do("POST", e.services+"/api/v1/callback-configurations", e.owner, map[string]any{
		"name": "run ends", "url": strings.Replace(rc.URL, "127.0.0.1", "localhost", 1) + "/runs",
		"subscribedEventTypes": []string{"platform.run.succeeded", "platform.run.failed"}}))
	e.must(201, e.do("POST", e.services+"/api/v1/event-subscriptions", e.owner, map[string]any{"name": "platform runs", "topicOrQueue": "platform.runs"}))

	e.publish(greetingWorkflow, true)
	app := e.token("events", "read,workflows")
	started := e.must(202, e.startRun(app, map[string]any{"templateId": "acme/greeting", "inputs": map[string]string{"name": "Ada", "title": "Dr"}}))
	run := e.waitRun(app, started["id"].(string), "succeeded")

	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no lifecycle event was delivered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	is.Equal(len(got), 1) // started is not subscribed
	ev := got[0]
	is.Equal(ev["type"], "platform.run.succeeded")
	is.Equal(ev["header-type"], "platform.run.succeeded")
	is.Equal(ev["run"].(map[string]any)["id"], run["platformRunId"])
	is.Equal(ev["run"].(map[string]any)["status"], "succeeded")
}
