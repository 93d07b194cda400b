package bridge_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestEventsStreamAndResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	other := e.token("other", "read,submit")
	s, _ := e.stream(tok)
	otherStream, _ := e.stream(other)

	id := e.submit(tok, map[string]any{"prompt": "#transcript:tools", "profile": "claude"})
	created := s.next(t, 20*time.Second, func(ev sseEvent) bool { return ev.Event == "job.created" })
	var env struct {
		Type  string          `json:"type"`
		JobID string          `json:"jobId"`
		Data  json.RawMessage `json:"data"`
	}
	is.NoErr(json.Unmarshal([]byte(created.Data), &env))
	is.Equal(env.JobID, id)
	is.Equal(env.Type, "job.created")
	tool := s.next(t, 20*time.Second, func(ev sseEvent) bool { return ev.Event == "tool.started" })
	is.True(strings.Contains(tool.Data, `"Read"`))
	done := s.next(t, 20*time.Second, func(ev sseEvent) bool {
		return ev.Event == "job.updated" && strings.Contains(ev.Data, `"state":"succeeded"`)
	})
	doneID, err := strconv.Atoi(done.ID)
	is.NoErr(err)

	// Other clients see none of it.
	select {
	case ev := <-otherStream.events:
		t.Fatalf("other client got %v", ev)
	case <-time.After(200 * time.Millisecond):
	}

	// Resume exactly after an id.
	createdID, _ := strconv.Atoi(created.ID)
	resumed, _ := e.stream(tok, "Last-Event-ID", created.ID)
	first := resumed.next(t, 20*time.Second, func(sseEvent) bool { return true })
	firstID, _ := strconv.Atoi(first.ID)
	is.True(firstID > createdID)
	last := resumed.next(t, 20*time.Second, func(ev sseEvent) bool { return ev.ID == done.ID })
	is.Equal(last.Data, done.Data)
	_ = doneID

	for _, bad := range []string{"-1", "abc", "1.5", "3x", "+3", "99999999999999999999"} {
		_, r := e.stream(tok, "Last-Event-ID", bad)
		if r.Status != 400 {
			t.Errorf("Last-Event-ID %q: %d", bad, r.Status)
		}
	}
	_, r := e.stream(tok, "Last-Event-ID", "0")
	is.Equal(r.Status, 200)
}

func TestEventsExpiredCursor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCapacity(100))
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	for i := 0; i < 40; i++ { // each job appends several events
		e.submit(tok, map[string]any{"prompt": fmt.Sprint("n", i)})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := e.do("GET", "/v1/bridge/status", tok, nil).json(t)
		if st["events"].(map[string]any)["oldest"].(float64) > 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("event 1 still retained after 30 s: %v", st["events"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, r := e.stream(tok, "Last-Event-ID", "1")
	is.Equal(r.Status, 409)
	is.Equal(r.code(), "cursor_expired")
}

func TestEventsHeartbeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBridge("  heartbeat: 50ms\n"))
	is := is.New(t)
	tok := e.token("ide", "read")
	req, _ := http.NewRequest("GET", e.url+"/v1/bridge/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	defer res.Body.Close()
	is.Equal(res.Header.Get("Content-Type"), "text/event-stream")
	sc := bufio.NewScanner(res.Body)
	pings := 0
	for sc.Scan() && pings < 2 {
		if sc.Text() == ": ping" {
			pings++
		}
	}
	is.Equal(pings, 2)
}

func TestEventsNeedReadScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := e.token("ide", "submit")
	_, r := e.stream(tok)
	if r.Status != 403 {
		t.Fatalf("status %d", r.Status)
	}
}

// TestSlowConsumerBlocksNobody opens a stream that never reads while ~2,000
// events flow: another stream still gets every event, and the jobs finish.
func TestSlowConsumerBlocksNobody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	stalled, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	is.NoErr(err)
	defer stalled.Close()
	fmt.Fprintf(stalled, "GET /v1/bridge/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", strings.TrimPrefix(e.url, "http://"), tok)
	// It never reads a byte.

	live, _ := e.stream(tok)
	var last string
	for i := 0; i < 250; i++ {
		last = e.submit(tok, map[string]any{"prompt": strings.Repeat("payload ", 40)})
	}
	e.waitState(tok, last, "succeeded")
	got := live.next(t, 30*time.Second, func(ev sseEvent) bool {
		return ev.Event == "job.updated" && strings.Contains(ev.Data, last) && strings.Contains(ev.Data, `"succeeded"`)
	})
	is.True(got.ID != "")
}
