package steptest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/platform/lang"
)

// The gate of step tests' agent steps (engine.TestGate; docs/platform-api.md,
// "Step tests and test activations"). An agent step under a step test
// calls its tools as the request says: a tool in tool_mocks is answered
// with its mock and never runs; a tool in real_tools runs for real, a
// side-effecting one (beyond read_only) only once the creator confirms
// that very call (a `confirm` item); any other tool is refused. The
// agent's answer becomes the step's output only once the creator reviews
// it (a `review` item). Runs of test activations, and every other run,
// are not gated.

// Codes of the tool results and step failures the gate answers (the agent
// reads them; the run's history keeps them).
const (
	toolNotAllowed = "STEPTEST_TOOL_NOT_ALLOWED"
	toolDeclined   = "STEPTEST_DECLINED"
	toolDisabled   = "STEPTEST_DISABLED"
	stepEnded      = "STEPTEST_ENDED"
	answerRejected = "STEPTEST_REJECTED"
)

var _ engine.TestGate = (*Service)(nil)

// gatePoll is how often a wait rereads its item when no answer woke it
// (the answer and the step test's end are also seen this way).
const gatePoll = 250 * time.Millisecond

// waiters are the gate's waits in this process, by item id: an item is
// pending only while something waits for its answer (after a restart the
// engine reports the agent's task as of unknown outcome instead).
type waiters struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func newWaiters() *waiters { return &waiters{m: map[string]chan struct{}{}} }

// add registers a wait for item id until the returned function is called.
func (w *waiters) add(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	w.mu.Lock()
	w.m[id] = ch
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		if w.m[id] == ch {
			delete(w.m, id)
		}
		w.mu.Unlock()
	}
}

func (w *waiters) live(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[id] != nil
}

// wake ends the wait for item id (it then reads the answer).
func (w *waiters) wake(id string) {
	w.mu.Lock()
	ch := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// GateTool decides a tool call of a test run's agent step.
func (s *Service) GateTool(ctx context.Context, c engine.GatedCall) (engine.ToolGate, error) {
	r, err := stepByRun(ctx, s.db.Reader(), c.RunID)
	if errors.Is(err, errNotFound) {
		return engine.ToolGate{Run: true}, nil // a test activation's run
	}
	if err != nil {
		return engine.ToolGate{}, err
	}
	if r.Ended != "" {
		return refuseTool(stepEnded, "the step test has ended (%s)", r.Ended), nil
	}
	if mock, ok := r.Options.ToolMocks[c.Tool]; ok {
		return engine.ToolGate{Mock: mock}, nil
	}
	if !slices.Contains(r.Options.RealTools, c.Tool) {
		return refuseTool(toolNotAllowed, "the step test neither mocks %s (tool_mocks) nor runs it for real (real_tools)", c.Tool), nil
	}
	effect := r.Options.RealToolEffects[c.Tool]
	if effect == "" {
		effect = lang.SideEffectUnsafe
	}
	// The policy may have changed since the step test was created.
	pol, err := getPolicy(ctx, s.db.Reader(), r.Environment)
	if err != nil {
		return engine.ToolGate{}, err
	}
	if pol.permit(effect) != nil {
		return refuseTool(toolDisabled, "the environment's test policy (%s) no longer allows %s calls", pol.TestCalls, effect), nil
	}
	if !sideEffecting(effect) {
		return engine.ToolGate{Run: true}, nil
	}
	status, err := s.hold(ctx, r, itemRow{Kind: PendingConfirm, NodeID: c.NodeID, TaskID: c.AgentTaskID,
		Detail: itemDetail{Tool: c.Tool, SideEffect: effect, Input: c.RedactedInput}},
		func(n int) string { return fmt.Sprintf("%s#call.%d", c.Instance, n+1) })
	switch {
	case err != nil:
		return engine.ToolGate{}, err
	case status == itemConfirmed:
		return engine.ToolGate{Run: true}, nil
	case status == itemDeclined:
		return refuseTool(toolDeclined, "the step test's creator declined this call of %s; it was not run", c.Tool), nil
	}
	return refuseTool(stepEnded, "the step test ended before the call of %s was confirmed; it was not run", c.Tool), nil
}

func refuseTool(code, format string, args ...any) engine.ToolGate {
	return engine.ToolGate{Refuse: &kernel.TaskError{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// ReviewAgent holds a step test's agent answer until its creator reviews
// it: accepted, it becomes the step's output; rejected, the step test
// ends failed (Answer cancels its run).
func (s *Service) ReviewAgent(ctx context.Context, a engine.GatedAnswer) (*kernel.TaskError, error) {
	r, err := stepByRun(ctx, s.db.Reader(), a.RunID)
	if errors.Is(err, errNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var status string
	it, err := reviewOf(ctx, s.db.Reader(), r.ID, a.TaskID)
	switch {
	case errors.Is(err, errNotFound):
		status, err = s.hold(ctx, r, itemRow{Kind: PendingReview, NodeID: a.NodeID, TaskID: a.TaskID,
			Detail: itemDetail{Output: a.RedactedOutput}},
			func(n int) string {
				if n == 0 {
					return a.Instance
				}
				return fmt.Sprintf("%s#review.%d", a.Instance, n+1)
			})
	case err != nil:
	case it.Status == itemPending:
		status, err = s.await(ctx, r.ID, it.ID)
	default:
		status = it.Status
	}
	switch {
	case err != nil:
		return nil, err
	case status == itemConfirmed:
		return nil, nil
	case status == itemDeclined:
		return &kernel.TaskError{Code: answerRejected, Message: "the step test's creator rejected the agent's answer"}, nil
	}
	return &kernel.TaskError{Code: stepEnded, Message: "the step test ended before the agent's answer was reviewed"}, nil
}

// hold stores it as a pending item of step test r and waits for its
// answer: it answers the item's final status, or "" when the step test
// ended first.
func (s *Service) hold(ctx context.Context, r stepRow, it itemRow, key func(n int) string) (string, error) {
	it.ID, it.StepTestID, it.Status, it.CreatedAt = s.newID(), r.ID, itemPending, s.timestamp()
	// The wait is registered first, so the item is pending the moment
	// it is stored.
	woken, done := s.waits.add(it.ID)
	defer done()
	if err := s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := insertItem(ctx, tx, it, key)
		return err
	}); err != nil {
		return "", err
	}
	return s.wait(ctx, r.ID, it.ID, woken)
}

// await waits again for a stored pending item (the same task's answer
// asked for twice).
func (s *Service) await(ctx context.Context, stepTestID, itemID string) (string, error) {
	woken, done := s.waits.add(itemID)
	defer done()
	return s.wait(ctx, stepTestID, itemID, woken)
}

// wait blocks until item id is answered (its status), the step test ends
// (""), or ctx ends (its error).
func (s *Service) wait(ctx context.Context, stepTestID, id string, woken <-chan struct{}) (string, error) {
	tick := time.NewTicker(gatePoll)
	defer tick.Stop()
	for {
		it, err := itemByID(ctx, s.db.Reader(), id)
		if err != nil {
			return "", err
		}
		if it.Status != itemPending {
			return it.Status, nil
		}
		st, err := stepByID(ctx, s.db.Reader(), stepTestID)
		if err != nil {
			return "", err
		}
		if st.Ended != "" {
			return "", nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-woken:
			woken = nil // answered: the next read sees it
		case <-tick.C:
		}
	}
}
