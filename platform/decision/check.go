package decision

// fastOp selects a specialised matcher for the common cell shapes. The
// fast paths are exact: they run only when both the literal and the input
// number are float-safe (see value), so float64 comparison equals decimal
// comparison; everything else (null inputs, exact big numbers, dates,
// durations, not() over comparisons) goes through the general test.
type fastOp uint8

const (
	opGeneric fastOp = iota
	opNumEq
	opNumLt
	opNumLe
	opNumGt
	opNumGe
	opNumRange
	opStrIn    // "a" or "a","b",...
	opStrNotIn // not("a","b",...)
	opBool
)

// check is one non-"-" cell of a rule, laid out compactly (56 bytes) because
// Evaluate walks every rule's checks.
type check struct {
	op             fastOp
	loOpen, hiOpen bool
	b              bool
	col            int32
	lo, hi         float64
	strs           []string
	t              *test
}

func newCheck(col int, t test) check {
	ch := check{col: int32(col), t: &t}
	floatSafe := func(v *value) bool { return v.k == kNumber && v.r == nil }
	switch t.kind {
	case tEq:
		switch {
		case floatSafe(&t.lo):
			ch.op, ch.lo = opNumEq, t.lo.f
		case t.lo.k == kString:
			ch.op, ch.strs = opStrIn, []string{t.lo.s}
		case t.lo.k == kBool:
			ch.op, ch.b = opBool, t.lo.b
		}
	case tLt, tLe, tGt, tGe:
		if floatSafe(&t.lo) {
			ch.op, ch.lo = opNumLt+fastOp(t.kind-tLt), t.lo.f // tLt..tGe and opNumLt..opNumGe share order
		}
	case tRange:
		if floatSafe(&t.lo) && floatSafe(&t.hi) {
			ch.op, ch.lo, ch.hi, ch.loOpen, ch.hiOpen = opNumRange, t.lo.f, t.hi.f, t.loOpen, t.hiOpen
		}
	case tOr:
		if strs, ok := stringSet(&t); ok {
			ch.op, ch.strs = opStrIn, strs
		}
	case tNot:
		if strs, ok := stringSet(&t.sub[0]); ok {
			ch.op, ch.strs = opStrNotIn, strs
		}
	}
	return ch
}

// stringSet returns the literals of a test that is a string equality or a
// list of string equalities.
func stringSet(t *test) ([]string, bool) {
	if t.kind == tEq && t.lo.k == kString {
		return []string{t.lo.s}, true
	}
	if t.kind != tOr {
		return nil, false
	}
	strs := make([]string, 0, len(t.sub))
	for i := range t.sub {
		s := &t.sub[i]
		if s.kind != tEq || s.lo.k != kString {
			return nil, false
		}
		strs = append(strs, s.lo.s)
	}
	return strs, true
}

// matches reports whether the cell's test is true for v.
func (ch *check) matches(v *value) bool {
	switch ch.op {
	case opNumRange:
		if v.k == kNumber && v.r == nil {
			f := v.f
			return (f > ch.lo || (f == ch.lo && !ch.loOpen)) && (f < ch.hi || (f == ch.hi && !ch.hiOpen))
		}
	case opNumEq:
		if v.k == kNumber && v.r == nil {
			return v.f == ch.lo
		}
	case opNumLt:
		if v.k == kNumber && v.r == nil {
			return v.f < ch.lo
		}
	case opNumLe:
		if v.k == kNumber && v.r == nil {
			return v.f <= ch.lo
		}
	case opNumGt:
		if v.k == kNumber && v.r == nil {
			return v.f > ch.lo
		}
	case opNumGe:
		if v.k == kNumber && v.r == nil {
			return v.f >= ch.lo
		}
	case opStrIn:
		if v.k == kString {
			for _, s := range ch.strs {
				if s == v.s {
					return true
				}
			}
			return false
		}
	case opStrNotIn:
		if v.k == kString {
			for _, s := range ch.strs {
				if s == v.s {
					return false
				}
			}
			return true
		}
	case opBool:
		if v.k == kBool {
			return v.b == ch.b
		}
	}
	return ch.t.match(v) == triTrue
}
