package sim

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/bridge/platform/platformtest"
)

// chainSrc is n set steps, each one node reduction.
func chainSrc(n int) string {
	var b strings.Builder
	b.WriteString("kind: workflow\nid: acme/chain\nversion: 1\nvars:\n  n: {type: integer, default: 0}\nsteps:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - id: s%d\n    set:\n      n: =vars.n + 1\n", i)
	}
	return b.String()
}

// callsSrc is n calls of acme/lookup.
func callsSrc(n int) string {
	return platformtest.CallsWorkflow("acme/calls", "acme/lookup@1", "{id: x}", n)
}

func continueWith(t *testing.T, p *Program, s *Session, lim Limits) {
	t.Helper()
	var c Command
	_ = json.Unmarshal([]byte(`{"continue":{}}`), &c)
	if err := Apply(p, s, c, lim); err != nil {
		t.Fatal(err)
	}
}

// TestPerContinueLimits measures what one continue through a workflow
// needs, then runs it with each limit at that bound (it ends) and one
// below (it pauses with PF-DEBUG-LIMIT, and the next continue finishes).
func TestPerContinueLimits(t *testing.T) {
	chain, _ := compileWorkflow(t, chainSrc(30))
	calls, _ := compileWorkflow(t, callsSrc(12))
	mocksOf := map[*Program]string{chain: `{}`, calls: `{"action:acme/lookup@1":{"output":{"name":"a"}}}`}
	type measure struct{ reductions, events, commands, boundaries int }
	measureRun := func(p *Program) (measure, *Session) {
		s := newSession(t, p, `{}`, mocksOf[p])
		r := &runner{p: p, s: s, lim: DefaultLimits()}
		if err := r.drive(true); err != nil {
			t.Fatal(err)
		}
		if s.Status != StatusSucceeded {
			t.Fatalf("%s %v", s.Status, s.Diagnostics)
		}
		return measure{events: r.events, commands: r.commands, boundaries: len(s.Crossed)}, s
	}
	for name, p := range map[string]*Program{"chain": chain, "calls": calls} {
		m, _ := measureRun(p)
		nodes := 30
		if name == "calls" {
			nodes = 12
		}
		cases := map[string]func(l *Limits, v int){
			"reductions": func(l *Limits, v int) { l.Reductions = v },
			"events":     func(l *Limits, v int) { l.Events = v },
			"commands":   func(l *Limits, v int) { l.Commands = v },
		}
		bounds := map[string]int{"reductions": nodes, "events": m.events, "commands": m.commands}
		if name == "calls" {
			cases["boundaries"] = func(l *Limits, v int) { l.Boundaries = v }
			bounds["boundaries"] = m.boundaries
		}
		for what, set := range cases {
			for _, delta := range []int{0, -1} {
				lim := DefaultLimits()
				set(&lim, bounds[what]+delta)
				s := newSession(t, p, `{}`, mocksOf[p])
				continueWith(t, p, s, lim)
				if delta == 0 && s.Status != StatusSucceeded {
					t.Errorf("%s: %s at the bound %d: %s %v", name, what, bounds[what], s.Status, s.Diagnostics)
				}
				if delta < 0 {
					if s.Status != StatusPaused || s.Boundary.Kind != "limit" || len(s.Diagnostics) == 0 || s.Diagnostics[0].Code != CodeLimit ||
						!strings.Contains(s.Diagnostics[0].Message, strings.TrimSuffix(what, "s")) {
						t.Errorf("%s: %s past the bound: %s %+v %v", name, what, s.Status, s.Boundary, s.Diagnostics)
						continue
					}
					if bounds[what]+delta == 0 {
						continue // nothing can ever be done within 0
					}
					continueWith(t, p, s, lim)
					if s.Status != StatusSucceeded {
						t.Errorf("%s: %s: the next continue: %s", name, what, s.Status)
					}
				}
			}
		}
	}
}

func TestVirtualTimeAndSignalLimits(t *testing.T) {
	p, _ := compileWorkflow(t, flowSrc)
	s := newSession(t, p, `{"id":"a"}`, `{"action:acme/lookup@1":{"output":{"name":"a"}}}`)
	lim := DefaultLimits()
	adv := func(sec int64) error {
		return Apply(p, s, Command{AdvanceTime: &AdvanceCommand{Seconds: &sec}}, lim)
	}
	if err := adv(366*24*3600 - 1); err != nil {
		t.Fatal(err)
	}
	if err := adv(1); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if err := adv(1); code(err) != CodeTime {
		t.Fatalf("past the bound: %v", err)
	}
	s = newSession(t, p, `{"id":"a"}`, `{"action:acme/lookup@1":{"output":{"name":"a"}}}`)
	lim.PendingSignals = 3
	for i := range 4 {
		err := Apply(p, s, Command{Signal: &SignalCommand{Name: "order.approved", Payload: json.RawMessage(`{"approver":"x"}`)}}, lim)
		if i < 3 && err != nil {
			t.Fatalf("signal %d: %v", i, err)
		}
		if i == 3 && code(err) != CodeLimit {
			t.Fatalf("signal past the bound: %v", err)
		}
	}
}

// TestDefaultLimitsAreDocumented pins the documented limits
// (docs/platform-api.md, "Debug sessions" and "Editor host"); the HTTP
// tests shrink them to reach them cheaply.
func TestDefaultLimitsAreDocumented(t *testing.T) {
	l := DefaultLimits()
	if l.Reductions != 10_000 || l.Events != 10_000 || l.Commands != 10_000 || l.Boundaries != 10_000 ||
		l.PendingSignals != 1_000 || l.VirtualTime != 366*24*time.Hour || l.SessionBytes != 64<<20 ||
		l.Lifetime != time.Hour || l.LivePerCreator != 4 || l.LivePerProject != 16 || l.RetainedPerProject != 1_000 {
		t.Fatalf("%+v", l)
	}
	if StudioSessions != 4 || StudioWork != 30*time.Second || MaxTestDataBytes != 1<<20 || MaxCanvasBytes != 256<<10 {
		t.Fatal("editor host or document limits differ from the documented ones")
	}
	st := newStudio(&Service{lim: l})
	if st.sessions != 4 || st.work != 30*time.Second {
		t.Fatalf("editor host defaults %d %s", st.sessions, st.work)
	}
}
