package kernel

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestReductionBudget: a loop whose body completes at once would do all
// its work in one Step; the kernel stops at MaxReductions, asks for a
// continue event, and resumes where it stopped.
func TestReductionBudget(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/budget
input: {type: object, properties: {n: {type: integer}}}
vars:
  sum: {type: integer, default: 0}
steps:
  - id: each
    forEach: =lists.range(input.n)
    concurrency: 50
    steps:
      - id: add
        set:
          sum: =vars.sum + item
result: {sum: =vars.sum}
`)
	const n = 25_000
	d := newDriver(t, p)
	eff := d.start(`{"n":` + strconv.Itoa(n) + `}`)
	steps := 1
	for len(effectsOf(eff, EffectContinue)) == 1 && steps < 10 {
		is.Equal(d.s.Status, StatusRunning)
		is.True(len(d.s.Ready) > 0)
		is.True(len(d.s.Scopes) <= 51) // the concurrency window bounds the state
		eff = d.must(Event{Kind: EventContinue})
		steps++
	}
	is.Equal(d.s.Status, StatusSucceeded)
	is.Equal(string(d.s.Output), `{"sum":`+strconv.Itoa(n*(n-1)/2)+`}`)
	// 25,000 set reductions plus the forEach and its end: three Steps.
	is.Equal(steps, 3)
}

func TestRunLimits(t *testing.T) {
	for _, tc := range []struct {
		name, step, code string
	}{
		{"too many items", `forEach: =lists.range(100001)
    steps:
      - id: w
        wait: 1s`, ErrCodeLimit},
		{"expression cost", `switch:
      - when: =lists.range(2000).map(x, lists.range(2000).map(y, x * y)).size() > 0
        next: end`, ErrCodeLimit},
		{"value size", `succeed:
      result: =lists.range(150000).map(x, "abcdefgh")`, ErrCodeLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			d := newDriver(t, load(t, "kind: workflow\nid: t/limit\nsteps:\n  - id: s\n    "+tc.step+"\n"))
			d.start(`{}`)
			is.Equal(d.s.Status, StatusFailed)
			is.Equal(d.s.Error.Code, tc.code)
		})
	}
}

func TestEventLimits(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, `kind: workflow
id: t/buffer
steps:
  - id: w
    wait: 1h
  - id: s
    signal: ping
`))
	d.start(`{}`)
	big := `"` + strings.Repeat("x", MaxValueBytes) + `"`
	is.Equal(ErrorCode(d.try(Event{Kind: EventSignalReceived, Signal: "ping", Payload: json.RawMessage(big)})), CodeValidation)
	for range MaxBufferedSignals { // Step directly: the driver's checks are quadratic here
		s, _, err := Step(d.p, d.s, Event{Seq: d.s.Seq + 1, At: d.now, Kind: EventSignalReceived, Signal: "ping", Payload: json.RawMessage(`1`)})
		is.NoErr(err)
		d.s = s
	}
	is.Equal(ErrorCode(d.try(Event{Kind: EventSignalReceived, Signal: "ping"})), "PF-OPERATION-CAPACITY")
	d.fireNext()
	is.Equal(d.s.Status, StatusSucceeded)
	is.Equal(outputOf(t, d.s, "s"), `1.0`) // no schema: a double
	is.Equal(len(d.s.Signals), 0)          // the run ended; the rest are dropped
}
