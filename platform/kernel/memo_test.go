package kernel

import (
	"encoding/json"
	"strconv"
	"testing"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"github.com/matryer/is"
)

// TestStepsObject: the steps variable finds outputs from the innermost
// scope outwards, decodes each once, sees a replaced output, and iterates,
// sizes and compares like the map it stands for.
func TestStepsObject(t *testing.T) {
	is := is.New(t)
	st := &State{Scopes: map[string]*Scope{
		"":      {Outputs: map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`{"x":2.0}`)}},
		"l[0]":  {Parent: "", Outputs: map[string]json.RawMessage{"c": json.RawMessage(`"s"`)}},
		"other": {Outputs: map[string]json.RawMessage{"d": json.RawMessage(`true`)}},
	}}
	m := &machine{st: st}
	o := m.stepsVal("l[0]").(*stepsObject)

	a, ok := o.Find(types.String("a"))
	is.True(ok)
	is.Equal(a.(traitsGetter).Get(types.String("output")), types.Int(1))
	c, ok := o.Find(types.String("c"))
	is.True(ok)
	is.Equal(c.(traitsGetter).Get(types.String("output")), types.String("s"))
	_, ok = o.Find(types.String("d")) // another scope's
	is.True(!ok)
	is.Equal(o.Contains(types.String("b")), types.True)
	is.Equal(o.Contains(types.Int(1)), types.False)
	is.True(types.IsError(o.Get(types.String("zz"))))
	is.Equal(o.Size(), types.Int(3))
	var keys []string
	for it := o.Iterator(); it.HasNext() == types.True; {
		keys = append(keys, string(it.Next().(types.String)))
	}
	is.Equal(keys, []string{"a", "b", "c"})
	is.Equal(o.Equal(o.object()), types.True)
	is.Equal(o.object().Equal(o), types.True)
	is.Equal(o.ConvertToType(types.MapType), ref.Val(o))
	is.Equal(o.ConvertToType(types.TypeType), ref.Val(types.MapType))
	is.True(types.IsError(o.ConvertToType(types.StringType)))

	// Decoded once: the same value again, until the output is replaced.
	again, _ := o.Find(types.String("a"))
	is.True(again == a)
	st.Scopes[""].Outputs["a"] = json.RawMessage(`2`)
	changed, _ := o.Find(types.String("a"))
	is.True(changed != a)
	is.Equal(changed.(traitsGetter).Get(types.String("output")), types.Int(2))
}

type traitsGetter interface{ Get(ref.Val) ref.Val }

// TestMemoCarriesAcrossSteps: Step hands its memo to the state it returns,
// so an output decoded in one Step is not decoded again in the next; a
// state read back from JSON has none (and steps the same, which
// TestStateJSONRoundTrip checks).
func TestMemoCarriesAcrossSteps(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, richWF))
	var memos []*valueMemo
	richScript(d, func() { memos = append(memos, d.s.memo) })
	is.True(d.s.memo != nil)
	for _, mm := range memos[1:] {
		is.True(mm == d.s.memo) // one memo for the run's lineage
	}
	var back State
	is.NoErr(json.Unmarshal(mustJSON(t, d.s), &back))
	is.True(back.memo == nil)
}

// TestMemoSharedAcrossGoroutines steps the same states from many
// goroutines at once (they share one memo; run with -race).
func TestMemoSharedAcrossGoroutines(t *testing.T) {
	p := load(t, richWF)
	d := newDriver(t, p)
	var states []State
	richScript(d, func() { states = append(states, d.s) })
	for i := range len(states) - 1 {
		want, _, err := Step(p, states[i], d.events[i+1])
		if err != nil {
			t.Fatal(err)
		}
		wantJSON := string(mustJSON(t, want))
		inParallel(t, 4, func() string {
			got, _, err := Step(p, states[i], d.events[i+1])
			if err != nil {
				return err.Error()
			}
			if string(mustJSON(t, got)) != wantJSON {
				return "different state after event " + strconv.Itoa(i+1)
			}
			return ""
		})
	}
}

// TestMemoPrune: the outputs of finished loop iterations leave the memo,
// so it stays proportional to the state.
func TestMemoPrune(t *testing.T) {
	is := is.New(t)
	p := load(t, "kind: workflow\nid: t/prune\nvars:\n  sum: {type: integer, default: 0}\nsteps:\n"+
		"  - id: each\n    forEach: =lists.range(400)\n    concurrency: 5\n    steps:\n"+
		"      - {id: one, set: {sum: =vars.sum + item}}\n      - {id: two, set: {sum: =vars.sum + 1}}\n"+
		"result: {sum: =vars.sum}\n")
	d := newDriver(t, p)
	d.start(`{}`)
	for d.s.Status == StatusRunning && len(d.s.Ready) > 0 {
		d.must(Event{Kind: EventContinue})
	}
	is.Equal(d.s.Status, StatusSucceeded)
	is.Equal(string(d.s.Output), `{"sum":`+strconv.Itoa(400*399/2+400)+`}`)
	live := len(d.s.Vars)
	for _, sc := range d.s.Scopes {
		live += len(sc.Outputs)
	}
	is.True(d.s.memo != nil)
	n := len(d.s.memo.outputs) + len(d.s.memo.vars)
	is.True(n <= 2*live+64) // without pruning: 800 outputs of finished iterations
}

// TestStateUnmarshalReplaces: decoding into a State that holds another run
// gives exactly what decoding into a fresh one gives.
func TestStateUnmarshalReplaces(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, richWF))
	var states []State
	richScript(d, func() { states = append(states, d.s) })
	first, last := mustJSON(t, states[0]), mustJSON(t, states[len(states)-1])
	var s State
	is.NoErr(json.Unmarshal(last, &s))
	is.NoErr(json.Unmarshal(first, &s))
	is.Equal(string(mustJSON(t, s)), string(first))
	var fresh State
	is.NoErr(json.Unmarshal(first, &fresh))
	is.Equal(string(mustJSON(t, s)), string(mustJSON(t, fresh)))
	is.True(json.Unmarshal([]byte(`{"seq":"x"}`), &s) != nil)
}
