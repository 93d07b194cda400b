package decision

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

type hitPolicy uint8

const (
	hpUnique hitPolicy = iota
	hpAny
	hpPriority
	hpFirst
	hpCollect
	hpRuleOrder
	hpOutputOrder
)

var hitPolicyNames = map[string]hitPolicy{
	"UNIQUE":       hpUnique,
	"ANY":          hpAny,
	"PRIORITY":     hpPriority,
	"FIRST":        hpFirst,
	"COLLECT":      hpCollect,
	"RULE ORDER":   hpRuleOrder,
	"OUTPUT ORDER": hpOutputOrder,
}

type aggregation uint8

const (
	aggNone aggregation = iota
	aggSum
	aggCount
	aggMin
	aggMax
)

var aggregationNames = map[string]aggregation{
	"SUM":   aggSum,
	"COUNT": aggCount,
	"MIN":   aggMin,
	"MAX":   aggMax,
}

// Compiled is a validated table with pre-parsed tests. It is immutable and
// safe for concurrent use.
type Compiled struct {
	id      string
	policy  hitPolicy
	agg     aggregation
	inputs  []compiledInput
	outputs []compiledOutput
	rules   []compiledRule
	checks  []check    // all rules' non-"-" cells, contiguous for cache locality
	ruleEnd []int32    // rule i owns checks[ruleEnd[i-1]:ruleEnd[i]]
	def     *rowOutput // nil: no default
}

type compiledInput struct {
	name  string
	path  []string // dotted name split into segments; nil when flat
	typ   colType
	typed bool // false when the declared type is invalid (its cells are not parsed)
}

type compiledOutput struct {
	name    string
	typ     colType
	allowed map[string]int // valueKey -> priority (0 = highest); nil when unrestricted
}

// rowOutput is one rule's (or the default's) outputs, pre-normalized.
type rowOutput struct {
	raw  []any   // canonical Go value per output (float64, string, bool, nil)
	vals []value // typed value per output, for ANY equality and MIN/MAX
	prio []int   // per output: index in allowedValues (0 when unrestricted)
}

type compiledRule struct {
	id  string
	out rowOutput
}

// ID returns the table id (may be empty).
func (c *Compiled) ID() string { return c.id }

// Inputs returns the input names in column order (e.g. to check that a
// workflow provides them).
func (c *Compiled) Inputs() []string {
	names := make([]string, len(c.inputs))
	for i := range c.inputs {
		names[i] = c.inputs[i].name
	}
	return names
}

// Outputs returns the output names in column order.
func (c *Compiled) Outputs() []string {
	names := make([]string, len(c.outputs))
	for i := range c.outputs {
		names[i] = c.outputs[i].name
	}
	return names
}

// compiler accumulates errors so Compile can report all of them at once.
type compiler struct {
	errs Errors
}

func (cp *compiler) add(rule, col int, field string, offset int, format string, args ...any) {
	cp.errs = append(cp.errs, &Error{RuleIndex: rule, Column: col, Field: field, Offset: offset, Msg: fmt.Sprintf(format, args...)})
}

// Compile validates the table and pre-parses its tests. On failure the
// error is an Errors value listing every problem with its location.
func Compile(t *Table) (*Compiled, error) {
	if t == nil {
		return nil, Errors{{RuleIndex: -1, Column: -1, Offset: -1, Field: "table", Msg: "table is nil"}}
	}
	cp := &compiler{}
	c := &Compiled{id: t.ID}

	if t.Kind != "" && t.Kind != Kind {
		cp.add(-1, -1, "kind", -1, "kind must be %q, got %q", Kind, clip(t.Kind))
	}
	c.policy = hpUnique
	if t.HitPolicy != "" {
		p, ok := hitPolicyNames[t.HitPolicy]
		if !ok {
			cp.add(-1, -1, "hitPolicy", -1, "unknown hit policy %q (want UNIQUE, ANY, PRIORITY, FIRST, COLLECT, RULE ORDER or OUTPUT ORDER)", clip(t.HitPolicy))
		}
		c.policy = p
	}

	cp.compileInputs(c, t.Inputs)
	cp.compileOutputs(c, t.Outputs)
	cp.compileAggregation(c, t)

	if c.policy == hpPriority || c.policy == hpOutputOrder {
		ranked := false
		for i := range c.outputs {
			ranked = ranked || c.outputs[i].allowed != nil
		}
		if !ranked && len(c.outputs) > 0 {
			cp.add(-1, -1, "outputs", -1, "hit policy %s needs allowedValues on at least one output to rank outputs", t.HitPolicy)
		}
	}

	cp.compileRules(c, t.Rules)

	if t.Default != nil {
		row, ok := cp.row(c, t.Default, -1, "default", true)
		if ok {
			c.def = &row
		}
	}

	if len(cp.errs) > 0 {
		return nil, cp.errs
	}
	return c, nil
}

func (cp *compiler) compileInputs(c *Compiled, inputs []Input) {
	seen := make(map[string]bool, len(inputs))
	for i, in := range inputs {
		ci := compiledInput{name: in.Name}
		switch {
		case in.Name == "":
			cp.add(-1, i, "inputs.name", -1, "input name is required")
		case seen[in.Name]:
			cp.add(-1, i, "inputs.name", -1, "duplicate input name %q", clip(in.Name))
		case strings.HasPrefix(in.Name, ".") || strings.HasSuffix(in.Name, ".") || strings.Contains(in.Name, ".."):
			cp.add(-1, i, "inputs.name", -1, "input name %q has an empty path segment", clip(in.Name))
		}
		seen[in.Name] = true
		if strings.Contains(in.Name, ".") {
			ci.path = strings.Split(in.Name, ".")
		}
		if in.Type == "" {
			cp.add(-1, i, "inputs.type", -1, "input type is required (number, string, boolean, date, dateTime or duration)")
		} else if typ, ok := colTypeNames[in.Type]; ok {
			ci.typ, ci.typed = typ, true
		} else {
			cp.add(-1, i, "inputs.type", -1, "unknown type %q (want number, string, boolean, date, dateTime or duration)", clip(in.Type))
		}
		c.inputs = append(c.inputs, ci)
	}
}

func (cp *compiler) compileOutputs(c *Compiled, outputs []Output) {
	if len(outputs) == 0 {
		cp.add(-1, -1, "outputs", -1, "at least one output is required")
	}
	seen := make(map[string]bool, len(outputs))
	for i, o := range outputs {
		co := compiledOutput{name: o.Name}
		switch {
		case o.Name == "":
			cp.add(-1, i, "outputs.name", -1, "output name is required")
		case seen[o.Name]:
			cp.add(-1, i, "outputs.name", -1, "duplicate output name %q", clip(o.Name))
		}
		seen[o.Name] = true
		if o.Type != "" {
			if typ, ok := colTypeNames[o.Type]; ok {
				co.typ = typ
			} else {
				cp.add(-1, i, "outputs.type", -1, "unknown type %q (want number, string, boolean, date, dateTime or duration)", clip(o.Type))
			}
		}
		if o.AllowedValues != nil {
			if len(o.AllowedValues) == 0 {
				cp.add(-1, i, "outputs.allowedValues", -1, "allowedValues must not be empty")
			}
			co.allowed = make(map[string]int, len(o.AllowedValues))
			for _, raw := range o.AllowedValues {
				_, v, err := normalizeOutput(raw, co.typ)
				if err != nil {
					cp.add(-1, i, "outputs.allowedValues", -1, "%v", err)
					continue
				}
				key := valueKey(&v)
				if _, dup := co.allowed[key]; dup {
					cp.add(-1, i, "outputs.allowedValues", -1, "duplicate allowed value %s", describe(raw))
					continue
				}
				co.allowed[key] = len(co.allowed)
			}
		}
		c.outputs = append(c.outputs, co)
	}
}

func (cp *compiler) compileAggregation(c *Compiled, t *Table) {
	if t.Aggregation == "" {
		return
	}
	agg, ok := aggregationNames[t.Aggregation]
	if !ok {
		cp.add(-1, -1, "aggregation", -1, "unknown aggregation %q (want SUM, COUNT, MIN or MAX)", clip(t.Aggregation))
		return
	}
	if c.policy != hpCollect {
		cp.add(-1, -1, "aggregation", -1, "aggregation is only allowed with hit policy COLLECT")
		return
	}
	if len(c.outputs) != 1 {
		cp.add(-1, -1, "aggregation", -1, "aggregation needs exactly one output, the table has %d", len(c.outputs))
		return
	}
	typ := c.outputs[0].typ
	switch {
	case agg == aggSum && typ != typeNumber:
		cp.add(-1, 0, "outputs.type", -1, "SUM needs an output of type number, got %s", typ)
	case (agg == aggMin || agg == aggMax) && !typ.ordered():
		cp.add(-1, 0, "outputs.type", -1, "%s needs an output of an ordered type (number, string, date, dateTime or duration), got %s", t.Aggregation, typ)
	}
	c.agg = agg
}

func (cp *compiler) compileRules(c *Compiled, rules []Rule) {
	ids := make(map[string]int, len(rules))
	for ri, r := range rules {
		id := r.ID
		if id == "" {
			id = "rule-" + strconv.Itoa(ri+1)
		}
		if prev, dup := ids[id]; dup {
			cp.add(ri, -1, "rules.id", -1, "duplicate rule id %q (also rule %d)", clip(id), prev)
		} else {
			ids[id] = ri
		}
		cr := compiledRule{id: id}
		if len(r.When) != len(c.inputs) {
			cp.add(ri, -1, "rules.when", -1, "when has %d tests, the table has %d inputs", len(r.When), len(c.inputs))
		} else {
			for col, src := range r.When {
				if !c.inputs[col].typed {
					continue // already reported on the input; avoid one error per cell
				}
				t, err := parseUnaryTests(string(src), c.inputs[col].typ)
				if err != nil {
					var se *syntaxError
					if errors.As(err, &se) {
						cp.add(ri, col, "rules.when", se.off, "invalid test %q: %s", clip(string(src)), se.msg)
					} else {
						cp.add(ri, col, "rules.when", -1, "invalid test %q: %v", clip(string(src)), err)
					}
					continue
				}
				if t.kind != tAny {
					c.checks = append(c.checks, newCheck(col, t))
				}
			}
		}
		c.ruleEnd = append(c.ruleEnd, int32(len(c.checks)))
		if out, ok := cp.row(c, r.Then, ri, "rules.then", false); ok {
			cr.out = out
		}
		c.rules = append(c.rules, cr)
	}
}

// row normalizes a rule's `then` (or the default) into per-output values.
// partial allows an object with missing outputs (they become null).
func (cp *compiler) row(c *Compiled, raw any, ri int, field string, partial bool) (rowOutput, bool) {
	n := len(c.outputs)
	if n == 0 {
		return rowOutput{}, false
	}
	entries := make([]any, n)
	present := make([]bool, n)
	ok := true
	switch x := raw.(type) {
	case nil:
		cp.add(ri, -1, field, -1, "one entry per output is required")
		return rowOutput{}, false
	case []any:
		if len(x) != n {
			cp.add(ri, -1, field, -1, "has %d entries, the table has %d outputs", len(x), n)
			return rowOutput{}, false
		}
		copy(entries, x)
		for i := range present {
			present[i] = true
		}
	case map[string]any:
		index := make(map[string]int, n)
		for i := range c.outputs {
			index[c.outputs[i].name] = i
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // deterministic error order
		for _, k := range keys {
			i, known := index[k]
			if !known {
				cp.add(ri, -1, field, -1, "unknown output %q", clip(k))
				ok = false
				continue
			}
			entries[i], present[i] = x[k], true
		}
		if !partial {
			for i := range present {
				if !present[i] {
					cp.add(ri, i, field, -1, "missing output %q", clip(c.outputs[i].name))
					ok = false
				}
			}
		}
	default:
		if n != 1 {
			cp.add(ri, -1, field, -1, "must be a list or an object with %d outputs", n)
			return rowOutput{}, false
		}
		entries[0], present[0] = raw, true
	}
	out := rowOutput{raw: make([]any, n), vals: make([]value, n), prio: make([]int, n)}
	for i := range c.outputs {
		o := &c.outputs[i]
		g, v, err := normalizeOutput(entries[i], o.typ)
		if err != nil {
			cp.add(ri, i, field, -1, "output %q: %v", clip(o.name), err)
			ok = false
			continue
		}
		out.raw[i], out.vals[i] = g, v
		if o.allowed != nil && present[i] {
			p, allowed := o.allowed[valueKey(&v)]
			if !allowed {
				cp.add(ri, i, field, -1, "output %q: %s is not one of allowedValues", clip(o.name), describe(entries[i]))
				ok = false
				continue
			}
			out.prio[i] = p
		} else if o.allowed != nil {
			out.prio[i] = len(o.allowed) // implicit null default ranks last
		}
	}
	return out, ok
}

// valueKey is a canonical text for a value such that two values are FEEL-equal
// exactly when their keys are equal; it lets allowedValues be a map.
func valueKey(v *value) string {
	switch v.k {
	case kNumber:
		return "n:" + v.rat().RatString()
	case kString:
		return "s:" + v.s
	case kBool:
		return "b:" + strconv.FormatBool(v.b)
	case kDateTime:
		return fmt.Sprintf("t:%t:%d.%09d", v.zoned, v.i, v.n)
	case kNull:
		return "null"
	}
	return fmt.Sprintf("%d:%d.%d", v.k, v.i, v.n) // dates and durations
}

// normalizeOutput checks an output literal against the column type and
// returns its canonical Go value (numbers become float64, temporal values
// stay strings) and its typed value.
func normalizeOutput(raw any, typ colType) (any, value, error) {
	if raw == nil {
		return nil, value{}, nil
	}
	if tm, isTime := raw.(time.Time); isTime {
		// YAML decodes unquoted timestamps to time.Time; keep them as text.
		switch typ {
		case typeDate:
			if tm.Hour() != 0 || tm.Minute() != 0 || tm.Second() != 0 || tm.Nanosecond() != 0 {
				return nil, value{}, fmt.Errorf("expected date, got %s", describe(raw))
			}
			raw = tm.Format(time.DateOnly)
		case typeDateTime, typeAny, typeString:
			raw = tm.Format(time.RFC3339Nano)
		}
	}
	if typ == typeAny {
		switch raw.(type) {
		case string:
			typ = typeString
		case bool:
			typ = typeBoolean
		case map[string]any, []any:
			return nil, value{}, fmt.Errorf("expected a scalar, got %s", describe(raw))
		default:
			typ = typeNumber
		}
	}
	v, err := convert(raw, typ)
	if err != nil {
		return nil, value{}, err
	}
	if v.k == kNumber {
		return v.f, v, nil
	}
	return raw, v, nil
}
