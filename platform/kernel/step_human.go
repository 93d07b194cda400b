package kernel

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentbridge/bridge/platform/lang"
)

// Human steps open a task for people and wait for its completion: a
// decision out of the step's decisions and data valid for its form. The
// output is {decision, data, completedBy}.

func (m *machine) enterHuman(tok *Token, n *node) {
	act := m.activation(tok.Scope)
	title, err := evalString(n.htitle, act, "the title")
	if err != nil {
		m.evalFailed(err, tok)
		return
	}
	desc, err := evalString(n.description, act, "the description")
	if err != nil {
		m.evalFailed(err, tok)
		return
	}
	who, err := n.assignees.eval(act)
	if err != nil {
		m.evalFailed(err, tok)
		return
	}
	assignees, err := stringList(who)
	if err != nil {
		m.failRun(ErrCodeExpression, "the assignees of "+n.id+": "+err.Error(), tok)
		return
	}
	h := &HumanTask{
		ID:          humanTaskID(m.st.RunID, n.id, tok.Generation),
		Token:       tok.ID,
		Node:        n.id,
		Instance:    tok.Instance,
		Generation:  tok.Generation,
		Title:       title,
		Description: desc,
		Assignees:   assignees,
		Form:        n.formRaw,
		Decisions:   slices.Clone(n.decisions),
		OpenedAt:    m.now,
	}
	tok.Wait, tok.HumanID = WaitHuman, h.ID
	if n.deadlineMs > 0 {
		t := &Timer{ID: timerID(m.st.RunID, TimerHumanDeadline, n.id, tok.Generation, 0), Kind: TimerHumanDeadline,
			Due: addMs(m.now, n.deadlineMs), NodeID: n.id, Instance: tok.Instance, Token: tok.ID}
		h.Deadline = timePtr(t.Due)
		tok.TimerID, tok.Deadline = t.ID, timePtr(t.Due)
		m.startTimer(t)
	}
	m.st.Humans[h.ID] = h
	m.emit(Effect{Kind: EffectOpenHumanTask, Human: cloneHuman(h)})
}

func stringList(v any) ([]string, error) {
	switch x := v.(type) {
	case nil:
		return []string{}, nil
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("want strings, found %s", lang.JSONTypeName(e))
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a string or a list of strings, found %s", lang.JSONTypeName(v))
}

func cloneHuman(h *HumanTask) *HumanTask {
	c := *h
	c.Form = slices.Clone(h.Form)
	c.Assignees = slices.Clone(h.Assignees)
	c.Decisions = slices.Clone(h.Decisions)
	return &c
}

func (m *machine) onHumanCompleted() error {
	e := m.ev
	h := m.st.Humans[e.TaskID]
	if h == nil {
		return refuse(CodeRuntimeState, "human task %s is not open", e.TaskID)
	}
	if len(e.CompletedBy) > maxIDBytes {
		return refuse(CodeValidation, "completed_by is longer than %d bytes", maxIDBytes)
	}
	n := m.p.node(h.Node)
	data, err := humanData(n, h.Decisions, e.Decision, e.Data)
	if err != nil {
		return err
	}
	out, err := encodeValue(map[string]any{"decision": e.Decision, "data": n.form.normalize(data), "completedBy": e.CompletedBy})
	if err != nil {
		return refuseWrap(CodeValidation, err, "human task data")
	}
	delete(m.st.Humans, h.ID)
	tok := m.st.Tokens[h.Token]
	if tok == nil {
		return refuse(CodeRuntimeState, "no step waits for human task %s", h.ID)
	}
	m.cancelTimer(tok.TimerID)
	m.deliver(tok, out, n.next)
	return nil
}

// humanData checks a decision among decisions and data for n's form, and
// answers the data decoded.
func humanData(n *node, decisions []string, decision string, raw json.RawMessage) (any, error) {
	if !slices.Contains(decisions, decision) {
		return nil, refuse(CodeValidation, "decision %q is not one of %v", decision, decisions)
	}
	if len(raw) == 0 {
		raw = nullJSON
	}
	data, err := decodeExternal(raw)
	if err != nil {
		return nil, refuseWrap(CodeValidation, err, "human task data")
	}
	if err := n.form.validate(data); err != nil {
		return nil, refuseWrap(CodeValidation, err, "the data does not match the form of %s", n.id)
	}
	return data, nil
}
