package sim

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return "other: " + err.Error()
}

func TestSessionStepsToSucceeded(t *testing.T) {
	p, _ := compileWorkflow(t, flowSrc)
	s := newSession(t, p, `{"id":"c1"}`, `{"action:acme/lookup@1":{"output":{"name":"Ada"}}}`)
	v := s.View()
	if v.Status != StatusQueued || v.SelectedNode == nil || *v.SelectedNode != "lookup" {
		t.Fatalf("created: %+v", v)
	}
	run(t, p, s, `{"next":{}}`)
	v = s.View()
	if v.Status != StatusPaused || *v.SelectedNode != "bump" || string(v.Variables.Steps["lookup"]) != `{"name":"Ada"}` {
		t.Fatalf("after next: %s %v %s", v.Status, v.CurrentNodes, v.Variables.Steps["lookup"])
	}
	run(t, p, s, `{"continue":{}}`)
	v = s.View()
	if v.Status != StatusWaiting || v.Boundary.Kind != "wait" || len(v.Boundary.Waits) != 1 || v.Boundary.Waits[0].Signal != "order.approved" {
		t.Fatalf("after continue: %+v %+v", v.Status, v.Boundary)
	}
	if string(v.Variables.Vars["count"]) != "1" {
		t.Fatalf("vars %s", v.Variables.Vars)
	}
	run(t, p, s, `{"signal":{"name":"order.approved","payload":{"approver":"Bo"}}}`)
	if s.Status != StatusWaiting {
		t.Fatalf("a signal must not advance the graph: %s", s.Status)
	}
	run(t, p, s, `{"continue":{}}`)
	v = s.View()
	if v.Status != StatusSucceeded || string(v.Variables.Output) != `{"approver":"Bo","name":"Ada"}` {
		t.Fatalf("end: %s %s %v", v.Status, v.Variables.Output, v.Diagnostics)
	}
	if err := try(p, s, `{"next":{}}`); code(err) != CodeState {
		t.Fatalf("command after the end: %v", err)
	}
}

func TestBreakpointsPauseBeforeTheNode(t *testing.T) {
	p, _ := compileWorkflow(t, flowSrc)
	s := newSession(t, p, `{"id":"c1"}`, `{"node:lookup":{"output":{"name":"N"}},"action:acme/lookup@1":{"output":{"name":"A"}}}`)
	run(t, p, s, `{"breakpoints":{"node_ids":["approval"]}}`)
	run(t, p, s, `{"continue":{}}`)
	if s.Status != StatusPaused || s.Boundary.Kind != "breakpoint" || s.Boundary.NodeID != "approval" {
		t.Fatalf("%s %+v", s.Status, s.Boundary)
	}
	if got := string(s.View().Variables.Steps["lookup"]); got != `{"name":"N"}` {
		t.Fatalf("node key must win: %s", got)
	}
	// continue passes the breakpoint it stands on and stops at the wait.
	run(t, p, s, `{"continue":{}}`)
	if s.Status != StatusWaiting {
		t.Fatalf("%s", s.Status)
	}
	for _, bad := range []string{`{"breakpoints":{"node_ids":["nope"]}}`, `{"breakpoints":{"node_ids":["bump","bump"]}}`} {
		if err := try(p, s, bad); code(err) != CodeBreakpoint {
			t.Fatalf("%s: %v", bad, err)
		}
	}
}

func TestSignalDeadlineTimesOut(t *testing.T) {
	p, _ := compileWorkflow(t, flowSrc)
	for _, tc := range []struct {
		seconds string
		want    Status
	}{{"3599", StatusSucceeded}, {"3600", StatusTimedOut}} {
		s := newSession(t, p, `{"id":"c1"}`, `{"action:acme/lookup@1":{"output":{"name":"A"}}}`)
		run(t, p, s, `{"continue":{}}`)
		run(t, p, s, `{"advance_time":{"seconds":`+tc.seconds+`}}`)
		if s.Status != StatusWaiting {
			t.Fatalf("advance_time must not advance the graph: %s", s.Status)
		}
		err := try(p, s, `{"signal":{"name":"order.approved","payload":{"approver":"x"}}}`)
		if tc.want == StatusTimedOut && code(err) != CodeSignal {
			t.Fatalf("a signal exactly at the deadline is too late: %v", err)
		}
		run(t, p, s, `{"continue":{}}`)
		if s.Status != tc.want {
			t.Fatalf("advance %s: %s %v", tc.seconds, s.Status, s.Diagnostics)
		}
	}
}

func TestMissingMockAndRequestViolationFail(t *testing.T) {
	p, _ := compileWorkflow(t, flowSrc)
	s := newSession(t, p, `{"id":"c1"}`, `{}`)
	run(t, p, s, `{"continue":{}}`)
	if s.Status != StatusFailed || s.Diagnostics[0].Code != CodeMissingMock || s.Diagnostics[0].NodeID != "lookup" {
		t.Fatalf("%s %+v", s.Status, s.Diagnostics)
	}
}

func TestRetriesAdvanceVirtualTime(t *testing.T) {
	p, _ := compileWorkflow(t, flowSrc)
	s := newSession(t, p, `{"id":"c1"}`, `{"action:acme/lookup@1":[{"error":{"code":"BUSY"},"retryable":true},{"output":{"name":"A"}}]}`)
	run(t, p, s, `{"continue":{}}`)
	if s.Status != StatusWaiting || string(s.View().Variables.Steps["lookup"]) != `{"name":"A"}` {
		t.Fatalf("%s %v", s.Status, s.Diagnostics)
	}
	if s.Now.Sub(t0) != time.Second {
		t.Fatalf("virtual clock %s", s.Now.Sub(t0))
	}
}

func TestMockChecks(t *testing.T) {
	p, _ := compileWorkflow(t, flowSrc)
	for mocks, want := range map[string]string{
		`{"action:acme/other@1":{"output":{}}}`:                                CodeMockKey,
		`{"node:bump":{"output":{}}}`:                                          CodeMockKey,
		`{"node:nope":{"output":{}}}`:                                          CodeMockKey,
		`{"tool:search":{"output":{}}}`:                                        CodeMockKey,
		`{"action:acme/lookup@1":{"output":{"nom":"x"}}}`:                      CodeMockOutput,
		`{"node:lookup":[{"output":{"name":"a"}},{"output":{}}]}`:              CodeMockOutput,
		`{"action:acme/lookup@1":{"output":{"name":"a","token":"s"}}}`:         CodeSecretValue,
		`{"action:acme/lookup@1":{"output":{"name":"a"},"outcome":"unknown"}}`: CodeRequest,
		`{"action:acme/lookup@1":{"outcome":"maybe"}}`:                         CodeRequest,
		`{"action:acme/lookup@1":[]}`:                                          CodeRequest,
		`{"action:acme/lookup@1":{"retryable":true,"output":{}}}`:              CodeRequest,
		`{"action:acme/lookup@1":{"outputs":{}}}`:                              CodeRequest,
	} {
		ms, err := DecodeMocks([]byte(mocks), "/mocks")
		if err == nil {
			err = p.checkMocks(ms, "/mocks", false)
		}
		if code(err) != want {
			t.Errorf("%s: %v, want %s", mocks, err, want)
		}
	}
	s := &Session{ID: "x", Input: []byte(`{"id":"a","apiKey":"k"}`), Start: t0}
	if err := Begin(p, s); code(err) != CodeSecretValue || !strings.Contains(err.(*Error).Path, "/input/apiKey") {
		t.Fatalf("secret input: %v", err)
	}
	s = &Session{ID: "x", Input: []byte(`{"nope":1}`), Start: t0}
	if err := Begin(p, s); code(err) != CodeRequest {
		t.Fatalf("invalid input: %v", err)
	}
}

// TestInstanceKeyMocks: in the editor host, node:<instance key> answers
// one iteration and wins over node:<id>; P/debug/sessions refuses it.
func TestInstanceKeyMocks(t *testing.T) {
	p, _ := compileWorkflow(t, `kind: workflow
id: acme/each
version: 1
steps:
  - id: each
    forEach: =["a", "b", "c"]
    as: item
    steps:
      - id: look
        action: acme/lookup@1
        with: {id: =item}
    collect: =steps.look.output.name
`)
	raw := `{"node:look":{"output":{"name":"any"}},"node:look[1]":{"output":{"name":"second"}}}`
	ms, err := DecodeMocks([]byte(raw), "/mocks")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.checkMocks(ms, "/mocks", false); code(err) != CodeMockKey {
		t.Fatalf("instance keys outside the editor host: %v", err)
	}
	if err := p.checkMocks(ms, "/mocks", true); err != nil {
		t.Fatal(err)
	}
	s := &Session{ID: "00000000-0000-4000-8000-00000000aaaa", Mocks: ms, Input: []byte(`{}`), Start: t0}
	if err := Begin(p, s); err != nil {
		t.Fatal(err)
	}
	run(t, p, s, `{"continue":{}}`)
	if s.Status != StatusSucceeded || string(s.State.Scopes[""].Outputs["each"]) != `["any","second","any"]` {
		t.Fatalf("%s %s %v", s.Status, s.State.Scopes[""].Outputs["each"], s.Diagnostics)
	}
}
