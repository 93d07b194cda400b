package kernel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentbridge/bridge/platform/lang"
)

// forEach runs its body once per element, at most concurrency iterations
// at a time, in index order. Each iteration has a scope of its own (its
// steps' outputs and the loop variables); when an iteration's body ends,
// collect is evaluated in that scope and the scope is dropped, so the state
// holds at most concurrency iterations however long the list is.

func (m *machine) enterForEach(tok *Token, n *node) {
	v, err := n.items.eval(m.activation(tok.Scope))
	if err != nil {
		m.evalFailed(err, tok)
		return
	}
	items, ok := v.([]any)
	if !ok {
		m.failRun(ErrCodeExpression, fmt.Sprintf("the items of %s are %s, not a list", n.id, lang.JSONTypeName(v)), tok)
		return
	}
	if len(items) > MaxForEachItems {
		m.failRun(ErrCodeLimit, fmt.Sprintf("the items of %s are %d, more than %d", n.id, len(items), MaxForEachItems), tok)
		return
	}
	loop := &Loop{Items: make([]json.RawMessage, len(items))}
	for i, it := range items {
		raw, ok := m.encodeOrFail(it, tok, "forEach item")
		if !ok {
			return
		}
		loop.Items[i] = raw
	}
	if n.collect != nil {
		loop.Collected = make([]json.RawMessage, len(items))
	}
	tok.Wait, tok.Loop = WaitLoop, loop
	if len(items) == 0 {
		m.proceed(tok, m.loopOutput(n, loop), n.next)
		return
	}
	m.startIterations(tok, n)
}

func (m *machine) startIterations(c *Token, n *node) {
	l := c.Loop
	parent := m.st.Scopes[c.Scope]
	for l.Active < n.concurrency && l.Next < len(l.Items) && !m.terminal() {
		i := l.Next
		l.Next++
		l.Active++
		key := n.id + "[" + strconv.Itoa(i) + "]"
		if c.Scope != "" {
			key = c.Scope + "/" + key
		}
		m.st.Scopes[key] = &Scope{Loop: n.id, Index: i, Parent: c.Scope, Suffix: parent.Suffix + "[" + strconv.Itoa(i) + "]",
			Container: c.ID, Outputs: map[string]json.RawMessage{}}
		if n.body == nil {
			m.iterationDone(c, n, key)
			continue
		}
		m.push(m.newToken(*n.body, key, c.ID))
	}
}

// iterationDone collects an iteration's result and starts the next one.
func (m *machine) iterationDone(c *Token, n *node, key string) {
	l := c.Loop
	sc := m.st.Scopes[key]
	if sc == nil || l == nil {
		return
	}
	if n.collect != nil {
		v, err := n.collect.eval(m.activation(key))
		if err != nil {
			m.evalFailed(err, c)
			return
		}
		raw, ok := m.encodeOrFail(v, c, "collected value")
		if !ok {
			return
		}
		l.Collected[sc.Index] = raw
	}
	delete(m.st.Scopes, key)
	delete(m.cache.items, key)
	l.Active--
	l.Done++
	if l.Done == len(l.Items) {
		out := m.loopOutput(n, l)
		if len(out) > MaxValueBytes {
			m.failRun(ErrCodeLimit, fmt.Sprintf("the output of %s is over the %d byte limit", n.id, MaxValueBytes), c)
			return
		}
		m.deliver(c, out, n.next)
		return
	}
	m.startIterations(c, n)
}

// loopOutput is the collected list in index order, or null without collect.
func (m *machine) loopOutput(n *node, l *Loop) json.RawMessage {
	if n.collect == nil {
		return nullJSON
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, raw := range l.Collected {
		if i > 0 {
			b.WriteByte(',')
		}
		if raw == nil {
			raw = nullJSON
		}
		b.Write(raw)
	}
	b.WriteByte(']')
	return json.RawMessage(b.Bytes())
}
