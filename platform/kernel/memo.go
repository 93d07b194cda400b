package kernel

import (
	"encoding/json"
	"sync"

	"cel.dev/cel-go/common/types/ref"
)

// valueMemo keeps the CEL forms of a run's stored values (step outputs,
// variables, the input) from one Step to the next. Without it every Step
// decoded every output again to build the expressions' steps variable,
// which made a 1,000-step run quadratic: ≈1.9 s of CPU to continue through
// one in a debug session (BENCHMARKS.md, "Debug sessions").
//
// A State carries its memo in an unexported field: json.Marshal leaves it
// out and Step passes it on to the state it returns, so a caller that
// keeps the state between events (the simulator, the engine within a
// transaction) decodes each value once, and one that reads the state back
// from JSON starts with an empty memo. Entries are checked by identity: a
// stored raw value is never modified in place (State.clone shares them),
// so the same backing array of the same length is the same value, and a
// raw that differs (a new output, a state read back from JSON) is decoded
// again. CEL values are immutable, so entries can be shared by states and
// goroutines; the lock is for the maps.
type valueMemo struct {
	mu      sync.Mutex
	input   memoEntry
	vars    map[string]memoEntry // by variable name
	outputs map[string]memoEntry // by scope key + "\x00" + step id
}

type memoEntry struct {
	raw json.RawMessage
	val ref.Val
}

// same reports whether a and b are the same stored value (not merely equal
// bytes).
func same(a, b json.RawMessage) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// memo is the state's memo, created on first use.
func (m *machine) memo() *valueMemo {
	if m.st.memo == nil {
		m.st.memo = &valueMemo{vars: map[string]memoEntry{}, outputs: map[string]memoEntry{}}
	}
	return m.st.memo
}

func (vm *valueMemo) inputVal(raw json.RawMessage) ref.Val {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if vm.input.val == nil || !same(vm.input.raw, raw) {
		vm.input = memoEntry{raw: raw, val: decodeCEL(raw)}
	}
	return vm.input.val
}

func (vm *valueMemo) varVal(name string, raw json.RawMessage) ref.Val {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	e, ok := vm.vars[name]
	if !ok || !same(e.raw, raw) {
		e = memoEntry{raw: raw, val: decodeCEL(raw)}
		vm.vars[name] = e
	}
	return e.val
}

// outputVal is the {"output": …} object of a step's stored output.
func (vm *valueMemo) outputVal(scope, step string, raw json.RawMessage) ref.Val {
	k := scope + "\x00" + step
	vm.mu.Lock()
	defer vm.mu.Unlock()
	e, ok := vm.outputs[k]
	if !ok || !same(e.raw, raw) {
		e = memoEntry{raw: raw, val: newObject(map[string]ref.Val{"output": decodeCEL(raw)})}
		vm.outputs[k] = e
	}
	return e.val
}

// prune drops the entries s no longer holds once they outnumber the live
// values (finished loop iterations leave theirs behind), so a memo stays
// proportional to its state.
func (vm *valueMemo) prune(s *State) {
	live := len(s.Vars)
	for _, sc := range s.Scopes {
		live += len(sc.Outputs)
	}
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if len(vm.outputs)+len(vm.vars) <= 2*live+64 {
		return
	}
	outputs := make(map[string]memoEntry, live)
	for key, sc := range s.Scopes {
		for step, raw := range sc.Outputs {
			k := key + "\x00" + step
			if e, ok := vm.outputs[k]; ok && same(e.raw, raw) {
				outputs[k] = e
			}
		}
	}
	vars := make(map[string]memoEntry, len(s.Vars))
	for name, raw := range s.Vars {
		if e, ok := vm.vars[name]; ok && same(e.raw, raw) {
			vars[name] = e
		}
	}
	vm.outputs, vm.vars = outputs, vars
}

// UnmarshalJSON decodes into a fresh State: encoding/json would otherwise
// decode a raw value into the backing array of the one it replaces
// (breaking the memo's rule that stored values never change in place) and
// keep map entries and optional fields the new document does not have.
func (s *State) UnmarshalJSON(b []byte) error {
	type plain State // the same fields without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = State(p)
	return nil
}
