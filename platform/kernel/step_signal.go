package kernel

import (
	"encoding/json"
	"time"
)

// Signal steps wait for a named signal. A signal accepted strictly before
// the step's deadline wins; one accepted exactly at the deadline is too
// late, because every timer due at an event's time is processed before the
// event itself. Signals that arrive while no step waits for them are
// buffered (oldest first) and consumed by the next step waiting for that
// name.

func (m *machine) enterSignal(tok *Token, n *node) {
	for i, b := range m.st.Signals {
		if b.Name != n.signal {
			continue
		}
		raw, err := m.signalOutput(n, b.Payload)
		if err != nil {
			m.failRun(ErrCodeOutputInvalid, err.Error(), tok)
			return
		}
		m.st.Signals = append(m.st.Signals[:i:i], m.st.Signals[i+1:]...)
		m.record(Record{Type: RecordSignalReceived, NodeID: n.id, Instance: tok.Instance, Generation: tok.Generation,
			Signal: n.signal, ObservedAt: b.At, Detail: "buffered"})
		m.proceed(tok, raw, n.next)
		return
	}
	tok.Wait, tok.Signal = WaitSignal, n.signal
	if n.deadlineMs > 0 {
		t := &Timer{ID: timerID(m.st.RunID, TimerSignalDeadline, n.id, tok.Generation, 0), Kind: TimerSignalDeadline,
			Due: addMs(m.now, n.deadlineMs), NodeID: n.id, Instance: tok.Instance, Token: tok.ID}
		tok.TimerID, tok.Deadline = t.ID, timePtr(t.Due)
		m.startTimer(t)
	}
}

// signalOutput types a payload by the consuming step's schema.
func (m *machine) signalOutput(n *node, payload []byte) ([]byte, error) {
	v, err := decodeExternal(payload)
	if err != nil {
		return nil, err
	}
	return encodeValue(n.payload.normalize(v))
}

func (m *machine) onSignal() error {
	e := m.ev
	if e.Signal == "" || len(e.Signal) > maxSignalNameBytes {
		return refuse(CodeValidation, "a signal name of 1 to %d bytes is required", maxSignalNameBytes)
	}
	raw, err := m.p.signalPayload(e.Signal, e.Payload)
	if err != nil {
		return err
	}
	var waiting *Token
	for _, tok := range m.st.Tokens {
		if tok.Phase == PhaseWait && tok.Wait == WaitSignal && tok.Signal == e.Signal &&
			(waiting == nil || tok.Order < waiting.Order) {
			waiting = tok
		}
	}
	if waiting == nil {
		if len(m.st.Signals) >= MaxBufferedSignals {
			return refuse(CodeCapacity, "%d signals are already waiting to be consumed", MaxBufferedSignals)
		}
		m.st.Signals = append(m.st.Signals, BufferedSignal{Name: e.Signal, Payload: raw, Seq: e.Seq, At: m.now})
		m.record(Record{Type: RecordSignalBuffered, Signal: e.Signal})
		return nil
	}
	n := m.p.node(waiting.Node)
	out, err := m.signalOutput(n, raw)
	if err != nil {
		return refuseWrap(CodeValidation, err, "signal payload")
	}
	m.cancelTimer(waiting.TimerID)
	m.record(Record{Type: RecordSignalReceived, NodeID: n.id, Instance: waiting.Instance, Generation: waiting.Generation,
		Signal: e.Signal, Deadline: copyTime(waiting.Deadline)})
	m.deliver(waiting, out, n.next)
	return nil
}

func copyTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	return timePtr(*t)
}

// waitTimedOut: a signal or human step's deadline passed. It continues with
// onTimeout when it has one; otherwise the run ends as timed out.
func (m *machine) waitTimedOut(tok *Token, t *Timer) {
	n := m.p.node(tok.Node)
	m.record(Record{Type: RecordTimedOut, NodeID: n.id, Instance: tok.Instance, Generation: tok.Generation,
		Deadline: timePtr(t.Due), WaitID: t.ID})
	if h := m.st.Humans[tok.HumanID]; h != nil {
		delete(m.st.Humans, h.ID)
		m.emit(Effect{Kind: EffectCloseHumanTask, Human: cloneHuman(h), Reason: "timeout"})
	}
	if n.hasOnTimeout {
		m.deliver(tok, nullJSON, n.onTimeout)
		return
	}
	m.endRun(StatusTimedOut, nil, &RunError{Code: ErrCodeStepTimeout, Message: "step " + n.id + " reached its deadline",
		Node: n.id, Instance: tok.Instance}, false, "step_timeout")
}

// signalPayload checks a payload of the signal name (declared, valid for
// the schema of every step waiting for it) and answers it canonical.
func (p *Program) signalPayload(name string, payload json.RawMessage) (json.RawMessage, error) {
	nodes := p.signals[name]
	if len(nodes) == 0 {
		return nil, refuse(CodeValidation, "the workflow declares no signal %q", name)
	}
	if len(payload) == 0 {
		payload = nullJSON
	}
	raw, v, err := canonicalExternal(payload)
	if err != nil {
		return nil, refuseWrap(CodeValidation, err, "signal payload")
	}
	for _, n := range nodes {
		if err := n.payload.validate(v); err != nil {
			return nil, refuseWrap(CodeValidation, err, "the payload does not match the schema of signal %s at step %s", name, n.id)
		}
	}
	return raw, nil
}
