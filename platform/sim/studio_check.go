package sim

import (
	"encoding/json"
	"sort"

	"github.com/agentbridge/bridge/platform/api"
)

// CheckRequest is the body of POST /studio/local/testdata/check: what to
// check against (as an execution names it) and the test-data document.
type CheckRequest struct {
	Source
	Document json.RawMessage `json:"document"`
}

// CheckEntry is the verdict on one entry of the document, by JSON Pointer.
type CheckEntry struct {
	Path string `json:"path"`
	OK   bool   `json:"ok"`
	Code string `json:"code,omitempty"`
}

// CheckResponse lists the verdicts in path order.
type CheckResponse struct {
	Entries []CheckEntry `json:"entries"`
}

// TestData is the test-data editor document (docs/platform-api.md,
// "Editor documents"), schemaVersion 1.
type TestData struct {
	SchemaVersion int                        `json:"schemaVersion"`
	Kind          string                     `json:"kind"`
	UpdatedAt     string                     `json:"updatedAt"`
	Input         *TestInput                 `json:"input,omitempty"`
	Pins          map[string]json.RawMessage `json:"pins,omitempty"`
	Signals       map[string]json.RawMessage `json:"signals,omitempty"`
	Humans        map[string]json.RawMessage `json:"humans,omitempty"`
	AITurns       map[string]json.RawMessage `json:"aiTurns,omitempty"`
	Workflows     map[string]json.RawMessage `json:"workflows,omitempty"`
	Waits         *struct {
		AutoAdvance *bool `json:"autoAdvance,omitempty"`
	} `json:"waits,omitempty"`
}

// TestInput is the document's run input and where it came from.
type TestInput struct {
	Value  json.RawMessage `json:"value"`
	Source string          `json:"source"`
	// EnvironmentID and RunID name where a value with source "run" came
	// from (a stored document with run data needs run.read there).
	EnvironmentID string `json:"environmentId,omitempty"`
	RunID         string `json:"runId,omitempty"`
}

// Test-data sources.
var inputSources = map[string]bool{"manual": true, "schema": true, "simulated": true, "test-call": true, "run": true}

// DecodeTestData reads a test-data document strictly.
func DecodeTestData(raw []byte) (TestData, error) {
	var td TestData
	if err := decodeStrict(raw, &td, CodeDocTestData, "", "the test-data document does not decode"); err != nil {
		return td, err
	}
	if td.SchemaVersion != 1 {
		return td, refuse(CodeDocTestData, "/schemaVersion", "schemaVersion is 1")
	}
	if td.Input != nil && td.Input.Source != "" && !inputSources[td.Input.Source] {
		return td, refuse(CodeDocTestData, "/input/source", "source is manual, schema, simulated, test-call or run")
	}
	return td, nil
}

// nodeOfKey resolves a per-step key: an instance key (step id, then [i],
// #, ~n segments) is tried first, then a step id.
func (p *Program) nodeOfKey(key string) (string, bool) {
	if _, ok := p.nodes[key]; ok {
		return key, true
	}
	for i := len(key) - 1; i > 0; i-- {
		switch key[i] {
		case '[', '#', '~':
			if _, ok := p.nodes[key[:i]]; ok {
				return key[:i], true
			}
		}
	}
	return "", false
}

// check gives each entry of td its verdict against p.
func (p *Program) check(td TestData) []CheckEntry {
	var out []CheckEntry
	add := func(path string, err error) {
		e := CheckEntry{Path: path, OK: err == nil}
		if err != nil {
			e.Code = CodeDocTestData
			if se, ok := err.(*Error); ok && se.Code == CodeSecretValue {
				e.Code = CodeSecretValue
			}
		}
		out = append(out, e)
	}
	if td.Input != nil {
		s := &Session{ID: "00000000-0000-4000-8000-000000000000", Input: td.Input.Value, Start: fixedStart}
		add("/input/value", Begin(p, s))
	}
	for key, v := range td.Pins {
		add("/pins/"+escape(key), p.checkStepValue(key, v, "action", "agent", "workflow"))
	}
	for key, v := range td.AITurns {
		add("/aiTurns/"+escape(key), p.checkStepValue(key, v, "agent"))
	}
	for name, v := range td.Signals {
		err := p.kp.CheckSignal(name, v)
		if err == nil {
			if _, ok := secretAt(v, p.secrets.Signals[name]); ok {
				err = refuse(CodeSecretValue, "", "secret")
			}
		}
		add("/signals/"+escape(name), err)
	}
	for key, v := range td.Humans {
		var h struct {
			Decision string          `json:"decision"`
			Data     json.RawMessage `json:"data"`
		}
		node, ok := p.nodeOfKey(key)
		var err error
		switch {
		case !ok:
			err = refuse(CodeDocTestData, "", "no step")
		case json.Unmarshal(v, &h) != nil:
			err = refuse(CodeDocTestData, "", "a human entry is {decision, data}")
		default:
			err = p.kp.CheckHuman(node, h.Decision, h.Data)
			if _, secret := secretAt(h.Data, p.secrets.Forms[node]); err == nil && secret {
				err = refuse(CodeSecretValue, "", "secret")
			}
		}
		add("/humans/"+escape(key), err)
	}
	for ref, v := range td.Workflows {
		ms, err := DecodeMocks(json.RawMessage(`{"`+KeyWorkflow+ref+`":`+string(v)+`}`), "")
		if err == nil {
			err = p.checkMocks(ms, "", true)
		}
		add("/workflows/"+escape(ref), err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// fixedStart is the virtual start of input checks (any time will do).
var fixedStart = mustTime("2000-01-01T00:00:00Z")

// checkStepValue checks a pinned output of a step of one of kinds.
func (p *Program) checkStepValue(key string, v json.RawMessage, kinds ...string) error {
	node, ok := p.nodeOfKey(key)
	if !ok {
		return refuse(CodeDocTestData, "", "no step %q", key)
	}
	kindOK := false
	for _, k := range kinds {
		kindOK = kindOK || p.nodes[node].Kind == k
	}
	if !kindOK {
		return refuse(CodeDocTestData, "", "step %q is a %s step", key, p.nodes[node].Kind)
	}
	if err := p.kp.CheckOutput(node, v); err != nil {
		return err
	}
	if _, ok := secretAt(v, p.secrets.Steps[node]); ok {
		return refuse(CodeSecretValue, "", "secret")
	}
	return nil
}

func (s *Service) studioCheckRoute(c *api.Call) error {
	if _, err := authorizeSimulate(c); err != nil {
		return err
	}
	var req CheckRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if err := authorizeSource(c, req.Source); err != nil {
		return err
	}
	td, err := DecodeTestData(req.Document)
	if err != nil {
		return studioProblem(err)
	}
	var res CheckResponse
	err = s.studio.within(c.Context(), func() error {
		p, _, sum, err := s.studio.build(c.Context(), req.Source)
		if err != nil {
			return err
		}
		if p == nil {
			return &compileError{err: refuse(CodeStudioReq, "/source", "the workflow does not compile"), summary: sum}
		}
		res.Entries = p.check(td)
		return nil
	})
	if err != nil {
		return studioProblem(err)
	}
	if res.Entries == nil {
		res.Entries = []CheckEntry{}
	}
	return c.OK(res)
}
