package kernel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Verdict is the outcome of a replay.
type Verdict string

const (
	// Consistent: the history reproduces the recorded state exactly.
	Consistent Verdict = "consistent"
	// Inconsistent: an event was refused, the history runs past the
	// recorded state, or the reproduced state differs.
	Inconsistent Verdict = "inconsistent"
	// Incomplete: the history misses events (a gap, or it ends before the
	// recorded state's sequence number).
	Incomplete Verdict = "incomplete"
)

// ReplayResult says whether a history reproduces a recorded state.
type ReplayResult struct {
	Verdict Verdict `json:"verdict"`
	Detail  string  `json:"detail,omitempty"`
	// Seq is the sequence number the verdict refers to (the refused or
	// missing event, or the last one replayed).
	Seq int64 `json:"seq"`
	// State is the state the replay reached.
	State State `json:"state"`
}

// Replay feeds a run's recorded history to the kernel from the beginning
// and compares the result with the recorded state, from recorded facts
// only (no clock, no store).
func Replay(p *Program, history []Event, recorded State) ReplayResult {
	var s State
	for i, e := range history {
		want := int64(i) + 1
		switch {
		case e.Seq > want:
			return ReplayResult{Verdict: Incomplete, Seq: want, State: s, Detail: fmt.Sprintf("the history misses event %d", want)}
		case e.Seq < want:
			return ReplayResult{Verdict: Inconsistent, Seq: e.Seq, State: s, Detail: fmt.Sprintf("event %d appears out of order", e.Seq)}
		case e.Seq > recorded.Seq:
			return ReplayResult{Verdict: Inconsistent, Seq: e.Seq, State: s,
				Detail: fmt.Sprintf("the history has event %d after the recorded state's %d", e.Seq, recorded.Seq)}
		}
		next, _, err := Step(p, s, e)
		if err != nil {
			return ReplayResult{Verdict: Inconsistent, Seq: e.Seq, State: s, Detail: fmt.Sprintf("event %d (%s) is refused: %v", e.Seq, e.Kind, err)}
		}
		s = next
	}
	if s.Seq < recorded.Seq {
		return ReplayResult{Verdict: Incomplete, Seq: s.Seq + 1, State: s,
			Detail: fmt.Sprintf("the history ends at event %d, the recorded state is at %d", s.Seq, recorded.Seq)}
	}
	if diff := stateDiff(s, recorded); diff != "" {
		return ReplayResult{Verdict: Inconsistent, Seq: s.Seq, State: s, Detail: diff}
	}
	return ReplayResult{Verdict: Consistent, Seq: s.Seq, State: s}
}

// stateDiff compares two states by their JSON and names the first
// top-level field that differs ("" when they are identical).
func stateDiff(a, b State) string {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return fmt.Sprintf("a state cannot be encoded: %v %v", errA, errB)
	}
	if bytes.Equal(ja, jb) {
		return ""
	}
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(ja, &ma) != nil || json.Unmarshal(jb, &mb) != nil {
		return "the states differ"
	}
	keys := map[string]bool{}
	for k := range ma {
		keys[k] = true
	}
	for k := range mb {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !bytes.Equal(ma[k], mb[k]) {
			return fmt.Sprintf("the replayed state differs from the recorded one in %q", k)
		}
	}
	return "the states differ"
}
