package decision

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// Result is the outcome of one evaluation.
//
// Output is shaped as follows: a single-output table yields the value itself,
// a multi-output table an object keyed by output name. Single-hit policies
// (UNIQUE, ANY, PRIORITY, FIRST) return one such output; list policies
// (COLLECT without aggregation, RULE ORDER, OUTPUT ORDER) return a list of
// them, even for one match; COLLECT with an aggregation returns the aggregate.
//
// MatchedRuleIDs lists the rules that matched, in rule order, except: FIRST
// stops at the first match, and OUTPUT ORDER lists them in output order so
// that MatchedRuleIDs[i] produced Output[i].
type Result struct {
	Output         any      `json:"output"`
	MatchedRuleIDs []string `json:"matched_rule_ids"`
	UsedDefault    bool     `json:"used_default"`
}

// maxStackInputs is how many input values Evaluate keeps on the stack.
const maxStackInputs = 8

// Evaluate runs the table against one input object. Missing inputs are
// null. It returns an *EvalError wrapping ErrInputType when a value does not
// fit its column type, or ErrHitPolicy when the matches violate the hit
// policy (the Result then still carries MatchedRuleIDs).
func (c *Compiled) Evaluate(input map[string]any) (Result, error) {
	var buf [maxStackInputs]value
	vals := buf[:0]
	if len(c.inputs) > maxStackInputs {
		vals = make([]value, 0, len(c.inputs))
	}
	for i := range c.inputs {
		in := &c.inputs[i]
		v, err := convert(lookup(input, in), in.typ)
		if err != nil {
			return Result{MatchedRuleIDs: []string{}}, &EvalError{
				Err:   ErrInputType,
				Input: in.name,
				Msg:   fmt.Sprintf("input %q: %v", in.name, err),
			}
		}
		vals = append(vals, v)
	}

	// The hot loop: test each rule's non-"-" cells until one fails. It
	// allocates nothing unless more than len(mbuf) rules match.
	var mbuf [16]int
	matched := mbuf[:0]
	start := int32(0)
	for ri, end := range c.ruleEnd {
		ok := true
		for k := start; k < end; k++ {
			ch := &c.checks[k]
			if !ch.matches(&vals[ch.col]) {
				ok = false
				break
			}
		}
		start = end
		if ok {
			matched = append(matched, ri)
			if c.policy == hpFirst {
				break
			}
		}
	}
	if len(matched) == 0 {
		return c.noMatch(), nil
	}

	switch c.policy {
	case hpUnique:
		if len(matched) > 1 {
			ids := c.ids(matched)
			return Result{MatchedRuleIDs: ids}, &EvalError{
				Err:     ErrHitPolicy,
				RuleIDs: ids,
				Msg:     fmt.Sprintf("hit policy UNIQUE allows one matching rule, but rules %s match", strings.Join(ids, ", ")),
			}
		}
		return c.resultOne(matched[0], matched), nil
	case hpAny:
		first := &c.rules[matched[0]].out
		for _, ri := range matched[1:] {
			if !sameOutputs(first, &c.rules[ri].out) {
				ids := c.ids(matched)
				return Result{MatchedRuleIDs: ids}, &EvalError{
					Err:     ErrHitPolicy,
					RuleIDs: ids,
					Msg: fmt.Sprintf("hit policy ANY needs equal outputs, but rules %s and %s match with different outputs",
						c.rules[matched[0]].id, c.rules[ri].id),
				}
			}
		}
		return c.resultOne(matched[0], matched), nil
	case hpPriority:
		best := matched[0]
		for _, ri := range matched[1:] {
			if cmpPriority(&c.rules[ri].out, &c.rules[best].out) < 0 {
				best = ri
			}
		}
		return c.resultOne(best, matched), nil
	case hpFirst:
		return c.resultOne(matched[0], matched), nil
	case hpOutputOrder:
		slices.SortStableFunc(matched, func(a, b int) int {
			return cmpPriority(&c.rules[a].out, &c.rules[b].out)
		})
		return c.resultList(matched), nil
	case hpCollect:
		if c.agg != aggNone {
			return Result{Output: c.aggregate(matched), MatchedRuleIDs: c.ids(matched)}, nil
		}
		return c.resultList(matched), nil
	}
	return c.resultList(matched), nil // RULE ORDER
}

// lookup finds an input's raw value: the exact key first, then the dotted path.
func lookup(m map[string]any, in *compiledInput) any {
	if v, ok := m[in.name]; ok || in.path == nil {
		return v
	}
	var cur any = m
	for _, seg := range in.path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = obj[seg]; !ok {
			return nil
		}
	}
	return cur
}

func (c *Compiled) ids(matched []int) []string {
	ids := make([]string, len(matched))
	for i, ri := range matched {
		ids[i] = c.rules[ri].id
	}
	return ids
}

func (c *Compiled) resultOne(ri int, matched []int) Result {
	return Result{Output: c.shape(&c.rules[ri].out), MatchedRuleIDs: c.ids(matched)}
}

func (c *Compiled) resultList(matched []int) Result {
	list := make([]any, len(matched))
	for i, ri := range matched {
		list[i] = c.shape(&c.rules[ri].out)
	}
	return Result{Output: list, MatchedRuleIDs: c.ids(matched)}
}

// listPolicy reports whether results are lists of outputs.
func (c *Compiled) listPolicy() bool {
	switch c.policy {
	case hpRuleOrder, hpOutputOrder:
		return true
	case hpCollect:
		return c.agg == aggNone
	}
	return false
}

// noMatch returns the default (wrapped in a list for list policies so the
// result type does not change), or DMN's empty result: null, except COUNT,
// which is 0 like FEEL count([]).
func (c *Compiled) noMatch() Result {
	res := Result{MatchedRuleIDs: []string{}}
	switch {
	case c.def != nil:
		res.UsedDefault = true
		res.Output = c.shape(c.def)
		if c.listPolicy() {
			res.Output = []any{res.Output}
		}
	case c.agg == aggCount:
		res.Output = float64(0)
	}
	return res
}

// shape turns a row into the caller-visible output; maps are fresh per call
// so callers may mutate them.
func (c *Compiled) shape(r *rowOutput) any {
	if len(c.outputs) == 1 {
		return r.raw[0]
	}
	m := make(map[string]any, len(c.outputs))
	for i := range c.outputs {
		m[c.outputs[i].name] = r.raw[i]
	}
	return m
}

func sameOutputs(a, b *rowOutput) bool {
	for i := range a.vals {
		if eq, ok := equal(&a.vals[i], &b.vals[i]); !ok || !eq {
			return false
		}
	}
	return true
}

// cmpPriority orders rows by allowedValues position, output by output (the
// first output with allowedValues dominates); lower sorts first.
func cmpPriority(a, b *rowOutput) int {
	for i := range a.prio {
		if a.prio[i] != b.prio[i] {
			return cmpInt(int64(a.prio[i]), int64(b.prio[i]))
		}
	}
	return 0
}

// aggregate applies SUM/COUNT/MIN/MAX over the single output, following
// FEEL's list functions: COUNT counts every matched output (nulls included,
// duplicates included); SUM, MIN and MAX are null if any output is null (or,
// for MIN/MAX, not comparable). SUM is computed exactly with math/big.
func (c *Compiled) aggregate(matched []int) any {
	switch c.agg {
	case aggCount:
		return float64(len(matched))
	case aggSum:
		sum := new(big.Rat)
		for _, ri := range matched {
			v := &c.rules[ri].out.vals[0]
			if v.k != kNumber {
				return nil
			}
			sum.Add(sum, v.rat())
		}
		f, _ := sum.Float64()
		return f
	}
	best := matched[0]
	for _, ri := range matched {
		v := &c.rules[ri].out.vals[0]
		if v.k == kNull {
			return nil
		}
		cmp, ok := compare(v, &c.rules[best].out.vals[0])
		if !ok {
			return nil
		}
		if (c.agg == aggMin && cmp < 0) || (c.agg == aggMax && cmp > 0) {
			best = ri
		}
	}
	return c.rules[best].out.raw[0]
}
