package sim

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/kernel"
)

// ExecuteRequest is the body of POST /studio/local/debug/execute.
type ExecuteRequest struct {
	Source
	// Mode: workflow (to the end), step (until StepID has completed) or
	// before (until just before StepID is entered).
	Mode        string `json:"mode"`
	StepID      string `json:"stepId,omitempty"`
	InstanceKey string `json:"instanceKey,omitempty"`
	// Mocks are keyed like a session's; Workflows are called workflows'
	// outcomes by callee reference (workflow:<reference>).
	Mocks     json.RawMessage            `json:"mocks,omitempty"`
	Workflows map[string]json.RawMessage `json:"workflows,omitempty"`
	// Scripts are debug commands (camelCase; signal, humanDecision,
	// advanceTime) applied in order each time the run waits.
	Scripts []json.RawMessage `json:"scripts,omitempty"`
	// AutoAdvance moves the virtual clock to the next timer when the run
	// waits only for time and no script is left (default true).
	AutoAdvance *bool           `json:"autoAdvance,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"`
	Now         *string         `json:"now,omitempty"`
}

// ExecuteResponse answers an execution.
type ExecuteResponse struct {
	// Status: completed, blocked, failed or limit.
	Status string `json:"status"`
	// Reason, exactly when blocked: missing_mock, signal, human, path
	// (the run ended without reaching stepId) or callee (a called workflow
	// without a mock).
	Reason  string         `json:"reason,omitempty"`
	Trace   []TraceEntry   `json:"trace"`
	Compile CompileSummary `json:"compile"`
	// Run is where the simulated run stands (camelCase view).
	Run json.RawMessage `json:"run,omitempty"`
}

// maxExecuteRounds bounds the waits an execution passes.
const maxExecuteRounds = 1000

func (st *studio) execute(ctx context.Context, owner string, req ExecuteRequest) (*ExecuteResponse, error) {
	var out *ExecuteResponse
	err := st.within(ctx, func() error {
		var err error
		out, err = st.run(ctx, owner, req)
		return err
	})
	if err != nil {
		// After a timeout fn may still be writing out: only a finished
		// fn's result (sent through within's channel) may be read.
		return nil, err
	}
	return out, nil
}

func (st *studio) run(ctx context.Context, owner string, req ExecuteRequest) (*ExecuteResponse, error) {
	switch req.Mode {
	case "workflow":
	case "step", "before":
		if req.StepID == "" {
			return nil, refuse(CodeStudioReq, "/stepId", "mode %s needs stepId", req.Mode)
		}
	default:
		return nil, refuse(CodeStudioReq, "/mode", "mode is workflow, step or before")
	}
	if req.InstanceKey != "" && !strings.HasPrefix(req.InstanceKey, req.StepID) {
		return nil, refuse(CodeStudioReq, "/instanceKey", "an instance key starts with its step id")
	}
	res := &ExecuteResponse{Trace: []TraceEntry{}}
	p, _, sum, err := st.build(ctx, req.Source)
	res.Compile = sum
	if err != nil {
		return nil, err
	}
	if p == nil {
		res.Status = "failed"
		return res, nil
	}
	if req.StepID != "" {
		if _, ok := p.nodes[req.StepID]; !ok {
			return nil, refuse(CodeStudioReq, "/stepId", "no step %q in the workflow", req.StepID)
		}
	}
	ms, err := DecodeMocks(req.Mocks, "/mocks")
	if err != nil {
		return nil, err
	}
	for ref, raw := range req.Workflows {
		w, err := DecodeMocks(json.RawMessage(`{"`+KeyWorkflow+ref+`":`+string(raw)+`}`), "/workflows")
		if err != nil {
			return nil, refuse(CodeStudioReq, "/workflows/"+escape(ref), "a called workflow's mock is an outcome or a list of outcomes")
		}
		for k, v := range w {
			ms[k] = v
		}
	}
	if err := p.checkMocks(ms, "/mocks", true); err != nil {
		return nil, err
	}
	scripts := make([]Command, len(req.Scripts))
	for i, raw := range req.Scripts {
		c, err := DecodeStudioCommand(raw)
		if err != nil || (c.Signal == nil && c.HumanDecision == nil && c.AdvanceTime == nil) {
			return nil, refuse(CodeStudioReq, "/scripts/"+itoa(i), "a script step is one signal, humanDecision or advanceTime command")
		}
		scripts[i] = c
	}
	start := st.svc.clock()
	if req.Now != nil {
		if start, err = time.Parse(time.RFC3339Nano, *req.Now); err != nil {
			return nil, refuse(CodeStudioReq, "/now", "now must be an RFC 3339 time with a time zone")
		}
	}
	input := req.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	s := &Session{ID: st.svc.newID(), Creator: owner, Mocks: ms, Input: input, Start: start}
	if err := Begin(p, s); err != nil {
		return nil, err
	}
	matches := func(node, instance string) bool {
		return node == req.StepID && (req.InstanceKey == "" || instance == req.InstanceKey)
	}
	stubs := map[string]bool{}
	for round := 0; ; round++ {
		if err := st.advance(p, s, req, matches, res, stubs); err != nil {
			return nil, err
		}
		if done := st.settleExecution(p, s, req, res); done || round >= maxExecuteRounds {
			if !done {
				res.Status = "limit"
			}
			break
		}
		// waiting: the next script step, else time
		if len(scripts) > 0 {
			c := scripts[0]
			scripts = scripts[1:]
			if err := Apply(p, s, c, st.svc.lim); err != nil {
				return nil, err
			}
			continue
		}
		reason := ""
		for _, w := range s.Boundary.Waits {
			switch w.Kind {
			case "signal", "human":
				if reason == "" {
					reason = w.Kind
				}
			}
		}
		t, ok := kernel.NextDue(s.State)
		if reason != "" || !ok || (req.AutoAdvance != nil && !*req.AutoAdvance) {
			if reason == "" {
				reason = "signal"
			}
			res.Status, res.Reason = "blocked", reason
			break
		}
		sec := int64((t.Due.Sub(s.Now) + time.Second - 1) / time.Second)
		if err := Apply(p, s, Command{AdvanceTime: &AdvanceCommand{Seconds: &sec}}, st.svc.lim); err != nil {
			res.Status = "limit"
			break
		}
	}
	sort.Strings(res.Compile.Stubs)
	view, err := json.Marshal(s.View())
	if err == nil {
		res.Run, err = CamelKeys(view)
	}
	return res, err
}

// advance runs the execution on to its target, a wait or the end. In mode
// step it goes node by node (like next), so that it stops as soon as the
// target's completion is recorded and before anything else is entered.
func (st *studio) advance(p *Program, s *Session, req ExecuteRequest, matches func(node, instance string) bool,
	res *ExecuteResponse, stubs map[string]bool) error {
	collect := func(r *runner) {
		res.Trace = append(res.Trace, r.trace...)
		for _, b := range s.Crossed {
			if b.MockKey != "" && !stubs[b.MockKey] {
				stubs[b.MockKey] = true
				res.Compile.Stubs = append(res.Compile.Stubs, b.MockKey)
			}
		}
	}
	if req.Mode != "step" {
		r := &runner{p: p, s: s, lim: st.svc.lim, tracing: true}
		if req.Mode == "before" {
			r.before = matches
		}
		err := r.drive(true)
		collect(r)
		return err
	}
	for i := 0; ; i++ {
		r := &runner{p: p, s: s, lim: st.svc.lim, tracing: true,
			after: func(rec *kernel.Record) bool {
				return rec.Type == kernel.RecordStepCompleted && matches(rec.NodeID, rec.Instance)
			}}
		if err := r.drive(false); err != nil {
			return err
		}
		collect(r)
		if r.reached {
			s.Status, s.Boundary = StatusPaused, &Boundary{Kind: "target", NodeID: req.StepID, At: s.Now}
			return nil
		}
		if s.Status != StatusPaused || s.Boundary == nil || s.Boundary.Kind != "step" || i >= st.svc.lim.Reductions {
			return nil
		}
	}
}

// settleExecution decides whether an execution is over and how it ended.
func (st *studio) settleExecution(p *Program, s *Session, req ExecuteRequest, res *ExecuteResponse) bool {
	reachedTarget := s.Boundary != nil && s.Boundary.Kind == "target"
	switch {
	case reachedTarget:
		res.Status = "completed"
	case s.Status == StatusFailed && len(s.Diagnostics) > 0 && s.Diagnostics[len(s.Diagnostics)-1].Code == CodeMissingMock:
		res.Status, res.Reason = "blocked", "missing_mock"
		if n := s.Diagnostics[len(s.Diagnostics)-1].NodeID; p.nodes[n].Kind == "workflow" {
			res.Reason = "callee"
		}
	case s.Status == StatusSucceeded && req.Mode != "workflow":
		res.Status, res.Reason = "blocked", "path"
	case s.Status == StatusSucceeded:
		res.Status = "completed"
	case s.Status.Ended(), s.Status == StatusSuspended:
		res.Status = "failed"
	case s.Status == StatusPaused && s.Boundary != nil && s.Boundary.Kind == "limit":
		res.Status = "limit"
	case s.Status == StatusWaiting:
		return false
	default:
		res.Status = "limit"
	}
	return true
}

func (s *Service) studioExecuteRoute(c *api.Call) error {
	owner, err := authorizeSimulate(c)
	if err != nil {
		return err
	}
	var req ExecuteRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if err := authorizeSource(c, req.Source); err != nil {
		return err
	}
	res, err := s.studio.execute(c.Context(), owner, req)
	if err != nil {
		return studioProblem(err)
	}
	return c.OK(res)
}
