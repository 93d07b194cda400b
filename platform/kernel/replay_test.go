package kernel

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestReplay(t *testing.T) {
	p := load(t, richWF)
	d := newDriver(t, p)
	var states []State
	richScript(d, func() { states = append(states, d.s) })
	history := d.events
	n := len(history)

	tampered := d.s.clone()
	tampered.Vars["total"] = json.RawMessage(`1.0`)
	badEvent := append([]Event(nil), history...)
	badEvent[2].ChildStatus = "exploded"
	gap := append(append([]Event(nil), history[:4]...), history[5:]...)
	swapped := append([]Event(nil), history...)
	swapped[2], swapped[3] = swapped[3], swapped[2]

	for _, tc := range []struct {
		name     string
		history  []Event
		recorded State
		verdict  Verdict
		seq      int64
		detail   string
	}{
		{"full history", history, d.s, Consistent, int64(n), ""},
		{"a prefix against its own state", history[:5], states[4], Consistent, 5, ""},
		{"no history, no state", nil, State{}, Consistent, 0, ""},
		{"tampered state", history, *tampered, Inconsistent, int64(n), `"vars"`},
		{"refused event", badEvent, d.s, Inconsistent, 3, "refused"},
		{"events after the recorded state", history, states[4], Inconsistent, 6, "after the recorded state"},
		{"missing tail", history[:n-2], d.s, Incomplete, int64(n - 1), "ends at event"},
		{"gap", gap, d.s, Incomplete, 5, "misses event 5"},
		{"out of order", swapped, d.s, Incomplete, 3, "misses event 3"},
		{"no history for a started run", nil, d.s, Incomplete, 1, "ends at event 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			r := Replay(p, tc.history, tc.recorded)
			is.Equal(r.Verdict, tc.verdict)
			is.Equal(r.Seq, tc.seq)
			if !strings.Contains(r.Detail, tc.detail) {
				t.Errorf("detail %q does not mention %q", r.Detail, tc.detail)
			}
			if tc.verdict == Consistent {
				is.Equal(string(mustJSON(t, r.State)), string(mustJSON(t, tc.recorded)))
			}
		})
	}
}

func TestReplayAfterStateRoundTrip(t *testing.T) {
	is := is.New(t)
	p := load(t, richWF)
	d := newDriver(t, p)
	richScript(d, nil)
	// The engine reads both back from its store.
	var recorded State
	is.NoErr(json.Unmarshal(mustJSON(t, d.s), &recorded))
	var history []Event
	is.NoErr(json.Unmarshal(mustJSON(t, d.events), &history))
	is.Equal(Replay(p, history, recorded).Verdict, Consistent)
}
