package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cel.dev/cel-go/common/types"
	"github.com/agentbridge/bridge/platform/lang"
)

// Steps that complete within the reduction: decision, switch, set, fail,
// succeed, and a wait whose duration is not positive.

func (m *machine) enterDecision(tok *Token, n *node) {
	in, err := n.with.eval(m.activation(tok.Scope))
	if err != nil {
		m.evalFailed(err, tok)
		return
	}
	obj, ok := in.(map[string]any)
	if in == nil {
		obj, ok = map[string]any{}, true
	}
	if !ok {
		m.failRun(ErrCodeDecision, fmt.Sprintf("the input of a decision table must be an object, not %s", lang.JSONTypeName(in)), tok)
		return
	}
	res, err := n.table.Evaluate(obj)
	if err != nil {
		m.failRun(ErrCodeDecision, err.Error(), tok)
		return
	}
	out, err := fromGo(res.Output, 0)
	if err != nil {
		m.failRun(ErrCodeDecision, err.Error(), tok)
		return
	}
	// Decision outputs are numbers (double), strings and booleans.
	raw, ok := m.encodeOrFail(asDouble(out), tok, "decision output")
	if !ok {
		return
	}
	m.proceed(tok, raw, n.next)
}

func (m *machine) enterSwitch(tok *Token, n *node) {
	act := m.activation(tok.Scope)
	for i, c := range n.cases {
		v, err := c.when.eval(act)
		if err != nil {
			m.evalFailed(err, tok)
			return
		}
		b, ok := v.(bool)
		if !ok {
			m.failRun(ErrCodeExpression, fmt.Sprintf("case %d of %s is %s, not a bool", i+1, n.id, lang.JSONTypeName(v)), tok)
			return
		}
		if b {
			m.proceed(tok, nullJSON, c.next)
			return
		}
	}
	m.proceed(tok, nullJSON, n.def)
}

// enterSet assigns variables; every assignment of the step sees the
// variables as they were before it.
func (m *machine) enterSet(tok *Token, n *node) {
	act := m.activation(tok.Scope)
	vals := make([]json.RawMessage, len(n.assign))
	for i, a := range n.assign {
		v, err := a.value.eval(act)
		if err != nil {
			m.evalFailed(err, tok)
			return
		}
		d := m.p.varByName[a.name]
		typed := d.schema.normalize(v)
		if err := d.schema.validate(typed); err != nil {
			m.failRun(ErrCodeVarInvalid, fmt.Sprintf("variable %s: %v", a.name, err), tok)
			return
		}
		raw, ok := m.encodeOrFail(typed, tok, "variable "+a.name)
		if !ok {
			return
		}
		vals[i] = raw
	}
	for i, a := range n.assign {
		m.st.Vars[a.name] = vals[i]
	}
	m.cache.invalidateVars()
	m.proceed(tok, nullJSON, n.next)
}

func (m *machine) enterFail(tok *Token, n *node) {
	msg, err := evalString(n.message, m.activation(tok.Scope), "the message")
	if err != nil {
		m.evalFailed(err, tok)
		return
	}
	m.failRun(n.code, msg, tok)
}

func (m *machine) enterSucceed(tok *Token, n *node) {
	t := n.result
	if t == nil {
		t = m.p.result
	}
	out, err := t.eval(m.activation(tok.Scope))
	if err != nil {
		m.evalFailed(err, tok)
		return
	}
	m.succeed(out)
}

// enterWait starts a duration wait: a literal number of milliseconds, or an
// expression giving a duration or a duration string.
func (m *machine) enterWait(tok *Token, n *node) {
	ms, err := m.waitMs(tok, n)
	var ee *exprError
	if errors.As(err, &ee) {
		m.evalFailed(err, tok)
		return
	}
	if err != nil {
		m.failRun(ErrCodeWaitInvalid, err.Error(), tok)
		return
	}
	if ms <= 0 {
		m.record(Record{Type: RecordWaitElapsed, NodeID: n.id, Instance: tok.Instance, Generation: tok.Generation, Deadline: timePtr(m.now)})
		m.proceed(tok, nullJSON, n.next)
		return
	}
	t := &Timer{ID: timerID(m.st.RunID, TimerWait, n.id, tok.Generation, 0), Kind: TimerWait, Due: addMs(m.now, ms),
		NodeID: n.id, Instance: tok.Instance, Token: tok.ID}
	tok.Wait, tok.TimerID = WaitTimer, t.ID
	tok.Deadline = timePtr(t.Due)
	m.startTimer(t)
}

func (m *machine) waitMs(tok *Token, n *node) (int64, error) {
	var ms int64
	switch n.duration.kind {
	case 'l':
		switch x := n.duration.lit.(type) {
		case int64:
			ms = x
		case float64:
			ms = int64(x)
		default:
			return 0, fmt.Errorf("the wait of %s is not a number of milliseconds", n.id)
		}
	case 'e':
		v, err := n.duration.expr.evalVal(m.activation(tok.Scope))
		if err != nil {
			return 0, err
		}
		switch x := v.(type) {
		case types.Duration:
			ms = int64(x.Duration / time.Millisecond)
		case types.String:
			if ms, err = lang.ParseDuration(string(x)); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("the wait of %s is a %s, not a duration", n.id, v.Type().TypeName())
		}
	default:
		return 0, fmt.Errorf("the wait of %s is not a duration", n.id)
	}
	if ms > lang.MaxDurationMs {
		return 0, fmt.Errorf("the wait of %s is longer than 3650 days", n.id)
	}
	return ms, nil
}
