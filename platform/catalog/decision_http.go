package catalog

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/decision"
	"github.com/agentbridge/bridge/platform/lang"
)

// definitionKeys are the language's definition keys around a table; the
// evaluation routes accept and ignore them (kind and id are table keys).
var definitionKeys = []string{"version", "title", "description"}

// compileTable checks a decision table object (camelCase, package decision
// format) at the JSON Pointer at: 422 PF-VALIDATION with one diagnostic per
// problem, located in the table.
func compileTable(table map[string]any, at string) (*decision.Compiled, error) {
	t := make(map[string]any, len(table))
	for k, v := range table {
		t[k] = v
	}
	for _, k := range definitionKeys {
		delete(t, k)
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, api.Invalid(at, "the table cannot be encoded")
	}
	parsed, err := decision.Parse(raw)
	if err != nil {
		return nil, api.Invalid(at, "%s", err.Error())
	}
	compiled, err := decision.Compile(parsed)
	if err == nil {
		return compiled, nil
	}
	var errs decision.Errors
	if !errors.As(err, &errs) {
		return nil, api.Invalid(at, "%s", err.Error())
	}
	e := &api.Error{Code: api.CodeValidation, Message: "the decision table is invalid"}
	for _, de := range errs {
		if len(e.Diagnostics) == 20 {
			break
		}
		e.Diagnostics = append(e.Diagnostics, api.Diagnostic{Code: "decision_table", Path: at + "/" + pointerOf(de), Message: de.Error()})
	}
	return nil, e
}

// pointerOf renders a decision.Error's location as a JSON Pointer suffix
// ("rules/3/when/1").
func pointerOf(e *decision.Error) string {
	p := e.Path()
	var b bytes.Buffer
	for _, r := range p {
		switch r {
		case '.', '[':
			b.WriteByte('/')
		case ']':
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// evaluateInput decodes the input object (numbers kept exact) and
// evaluates. Input that does not fit its column, or matches that violate
// the hit policy, are 422 PF-VALIDATION carrying the evaluation (with the
// matched rules) as "result".
func evaluateInput(compiled *decision.Compiled, rawInput json.RawMessage) (DecisionEvaluation, error) {
	dec := json.NewDecoder(bytes.NewReader(rawInput))
	dec.UseNumber()
	var input map[string]any
	if err := dec.Decode(&input); err != nil || input == nil {
		return DecisionEvaluation{}, api.Invalid("/input", "input must be a JSON object")
	}
	res, err := compiled.Evaluate(input)
	out := DecisionEvaluation{Output: res.Output, MatchedRuleIDs: res.MatchedRuleIDs, UsedDefault: res.UsedDefault}
	if out.MatchedRuleIDs == nil {
		out.MatchedRuleIDs = []string{}
	}
	if err != nil {
		code := "evaluation"
		switch {
		case errors.Is(err, decision.ErrInputType):
			code = "input_type"
		case errors.Is(err, decision.ErrHitPolicy):
			code = "hit_policy"
		}
		return out, &api.Error{Code: api.CodeValidation, Message: "the decision could not be evaluated",
			Diagnostics: []api.Diagnostic{{Code: code, Path: "/input", Message: err.Error()}}, Result: out}
	}
	return out, nil
}

// evaluateDecision serves POST P/compiler/evaluate-decision: a table in
// the body, or a published decision table of the project by reference.
func (s *Service) evaluateDecision(c *api.Call) error {
	var req DecisionEvaluationRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if (req.Table == nil) == (req.Reference == "") {
		return api.Invalid("", "send exactly one of table and reference")
	}
	ctx, r := c.Context(), s.db.Reader()
	if err := s.requireProject(ctx, r, c); err != nil {
		return err
	}
	table := req.Table
	at := "/table"
	if req.Reference != "" {
		id, version, err := lang.ParseReference(req.Reference)
		if err != nil {
			return api.Invalid("/reference", "reference must be id@version: %v", err)
		}
		vid, err := versionExists(ctx, r, c.PathScope().Project, lang.KindDecisionTable, id, version)
		if err != nil {
			return err
		}
		if vid == "" {
			return api.NotFound("published decision table " + req.Reference)
		}
		v, err := getVersion(ctx, r, c.PathScope().Project, lang.KindDecisionTable, vid)
		if err != nil {
			return err
		}
		var art struct {
			Table map[string]any `json:"table"`
		}
		if err := json.Unmarshal(v.Artifact, &art); err != nil {
			return err
		}
		table, at = art.Table, "/reference"
	}
	compiled, err := compileTable(table, at)
	if err != nil {
		return err
	}
	out, err := evaluateInput(compiled, req.Input)
	if err != nil {
		return err
	}
	return c.OK(out)
}

// studioEvaluate serves POST /studio/local/decision/evaluate, the editor
// host's offline evaluation: the daemon owner token, or a platform token
// whose principal holds compile in some project (the table is in the body,
// so no project data is read).
func (s *Service) studioEvaluate(c *api.Call) error {
	if err := authorizeAnyCompile(c); err != nil {
		return err
	}
	var req StudioDecisionRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	compiled, err := compileTable(req.Table, "/table")
	if err != nil {
		return err
	}
	out, err := evaluateInput(compiled, req.Input)
	if err != nil {
		return err
	}
	return c.OK(out)
}

// authorizeAnyCompile allows the owner, or a caller with compile at the
// scope of one of its grants; the decision is recorded.
func authorizeAnyCompile(c *api.Call) error {
	if c.Caller == nil {
		return api.Unauthenticated("")
	}
	if c.Caller.Owner {
		return nil
	}
	for _, g := range c.Caller.Grants {
		if g.PrincipalID != c.Caller.Principal.ID || g.Revoked || g.Scope.IsRoot() {
			continue
		}
		if auth.Authorize(c.Caller.Grants, c.Caller.Principal, auth.CapCompile, g.Scope).Allowed {
			return c.Authorize(auth.CapCompile, g.Scope)
		}
	}
	return c.Authorize(auth.CapCompile, auth.Scope{})
}
