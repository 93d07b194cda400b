package lang

import (
	"fmt"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"gopkg.in/yaml.v3"
)

// Defaults the artifact makes explicit, so kernels never guess.
const (
	defaultActionTimeoutMs   = 5 * 60 * 1000
	defaultAgentTimeoutMs    = 10 * 60 * 1000
	defaultMaxAttempts       = 3
	defaultInitialIntervalMs = 1000
	defaultBackoff           = 2.0
	defaultMaxIntervalMs     = 60 * 1000
)

// ArtifactFormat names the artifact layout; it changes only with a new
// layout.
const (
	WorkflowFormat      = "agentbridge.workflow/v1"
	ActionFormat        = "agentbridge.action/v1"
	ConnectorFormat     = "agentbridge.connector/v1"
	DecisionTableFormat = "agentbridge.decisionTable/v1"
)

func itoa(i int) string { return strconv.Itoa(i) }

// wfCompiler compiles one workflow.
type wfCompiler struct {
	*compiler
	w     *Workflow
	t     *stepTable
	flow  *flow
	info  map[*Step]*stepInfo
	nodes []any
	// loopEnvs memoises loop scopes: extending an environment is costly and
	// loops over the same kind of items share one.
	loopEnvs  map[loopEnvKey]*cel.Env
	varByName map[string]*VarDecl
}

type loopEnvKey struct {
	parent          *cel.Env
	item, index, ty string
}

func (wc *wfCompiler) loopEnv(parent *cel.Env, item, index string, itemType *types.Type) (*cel.Env, error) {
	key := loopEnvKey{parent: parent, item: item, index: index, ty: typeString(itemType)}
	if env, ok := wc.loopEnvs[key]; ok {
		return env, nil
	}
	env, err := parent.Extend(cel.Variable(item, itemType), cel.Variable(index, types.IntType))
	if err != nil {
		return nil, fmt.Errorf("extend environment: %w", err)
	}
	wc.loopEnvs[key] = env
	return env, nil
}

// stepInfo is what a step's references resolved to.
type stepInfo struct {
	entry    *CatalogEntry
	in, out  *schemaDoc
	outType  *types.Type
	table    map[string]any // inline decision table (JSON)
	inSchema sview
}

// scope is the expression environment of a step list.
type scope struct {
	env      *cel.Env
	loopVars []string
}

func (c *compiler) compileWorkflow(w *Workflow) map[string]any {
	wc := &wfCompiler{compiler: c, w: w, info: map[*Step]*stepInfo{}, loopEnvs: map[loopEnvKey]*cel.Env{}}
	wc.t = c.collectSteps(w.Steps)
	for id, idx := range wc.t.byID {
		c.sourceMap[id] = c.src.rangeOf(wc.t.all[idx].YAML)
	}

	inDoc := c.ss.fromSource(w.Input, "input")
	outDoc := c.ss.fromSource(w.Output, "output")
	varFields := map[string]*types.Type{}
	var vars []any
	for _, v := range w.Vars {
		doc := c.ss.fromSource(v.Schema, "vars."+v.Name)
		varFields[v.Name] = c.ss.celType(doc.root(), "vars."+v.Name)
		entry := map[string]any{"name": v.Name, "schema": v.Schema.JSON, "default": nil}
		if m, ok := v.Schema.JSON.(map[string]any); ok {
			if def, has := m["default"]; has {
				entry["default"] = def
				for _, p := range c.ss.validateLiteral(doc.root(), def) {
					n := nodeAt(v.Schema.YAML, append([]string{"default"}, p.at...))
					c.diags.errorf(CodeSchemaMismatch, c.src.rangeOf(n), v.Schema.Path+"/default"+JSONPointer(p.at), "default of variable %s: %s", v.Name, p.msg)
				}
			}
		}
		vars = append(vars, entry)
	}

	for _, st := range wc.t.all {
		wc.prepare(st)
	}
	stepFields := map[string]*types.Type{}
	// Step ids in document order, so that derived type names never depend
	// on map iteration.
	for _, st := range wc.t.all {
		id := st.ID
		if id == "" || wc.t.all[wc.t.byID[id]] != st {
			continue
		}
		out := wc.info[st].outType
		if out == nil {
			out = types.DynType
		}
		stepFields[id] = c.reg.defineStruct("steps."+id, map[string]*types.Type{"output": out}, map[string]bool{"output": true})
	}
	runType := c.reg.defineStruct("run", map[string]*types.Type{
		"id": types.StringType, "workflowId": types.StringType, "workflowVersion": types.IntType, "startedAt": types.TimestampType,
	}, nil)
	inputType := types.DynType
	if inDoc != nil {
		inputType = c.ss.celType(inDoc.root(), "input")
	}
	opts := append(ExprEnvOptions(), cel.CustomTypeProvider(c.reg),
		cel.Variable("input", inputType),
		cel.Variable("steps", c.reg.defineStruct("steps", stepFields, nil)),
		cel.Variable("vars", c.reg.defineStruct("vars", varFields, nil)),
		cel.Variable("now", types.TimestampType),
		cel.Variable("run", runType),
	)
	env, err := cel.NewEnv(opts...)
	if err != nil {
		c.diags.errorf(CodeInternal, Range{}, "", "create expression environment: %v", err)
		return nil
	}
	wc.flow = c.analyzeFlow(wc.t, w.Steps)
	wc.steps(w.Steps, &scope{env: env})

	if req := c.ss.required(outDoc.root()); w.Result == nil && len(req) > 0 {
		ends := wc.flow.endReachable
		for _, st := range wc.t.all {
			ends = ends || (st.Kind == StepSucceed && st.SucceedResult == nil)
		}
		if ends {
			c.diags.errorf(CodeSchemaMismatch, c.src.rangeOf(w.Output.YAML), w.Output.Path,
				"the output requires %s, but the workflow has no result (add result, or give every succeed step one)", strings.Join(req, ", "))
		}
	}
	var result any
	if w.Result != nil {
		ctx := exprCtx{env: env, visible: wc.flow.endVisible[nil], steps: wc.t, what: "the workflow result"}
		result = c.compileValue(w.Result, ctx, valueSpec{schema: outDoc.root(), label: "output", what: "the workflow result"})
	}
	var entry any
	if len(w.Steps) > 0 {
		entry = w.Steps[0].ID
	}
	art := map[string]any{
		"format":      WorkflowFormat,
		"kind":        KindWorkflow,
		"id":          w.ID,
		"version":     w.Version,
		"title":       nilIfEmpty(w.Title),
		"description": nilIfEmpty(w.Description),
		"input":       schemaJSON(w.Input),
		"output":      schemaJSON(w.Output),
		"secrets": map[string]any{
			"input":  stringsOrEmpty(c.ss.secretPointers(inDoc.root())),
			"output": stringsOrEmpty(c.ss.secretPointers(outDoc.root())),
		},
		"vars":       orEmpty(vars),
		"timeoutMs":  durationMs(w.Timeout),
		"entry":      entry,
		"result":     result,
		"nodes":      orEmpty(wc.nodes),
		"references": c.references(),
		"expressions": map[string]any{
			"language":  "cel",
			"libraries": exprLibraries,
			"costLimit": ExprCostLimit,
			"variables": []string{"input", "steps", "vars", "now", "run"},
		},
	}
	return art
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func schemaJSON(s *Schema) any {
	if s == nil {
		return nil
	}
	return s.JSON
}

func durationMs(d *Duration) any {
	if d == nil {
		return nil
	}
	return d.Ms
}

func orEmpty(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

func stringsOrEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// prepare resolves a step's references and computes its output type.
func (wc *wfCompiler) prepare(st *Step) {
	info := &stepInfo{}
	wc.info[st] = info
	label := "steps." + st.ID + ".output"
	switch st.Kind {
	case StepAction, StepWorkflow:
		kind := KindAction
		if st.Kind == StepWorkflow {
			kind = KindWorkflow
		}
		info.entry = wc.resolveRef(st.Ref, kind)
		es := wc.entrySchemas(info.entry, st.Ref)
		info.in, info.out = es.input, es.output
		info.inSchema = es.input.root()
		if info.out != nil {
			info.outType = wc.ss.celType(info.out.root(), label)
		}
	case StepDecision:
		if st.InlineTable != nil {
			in, out, table := wc.inlineDecisionTable(st.InlineTable, joinPath(st.Path, "decision"))
			info.table = table
			if in != nil {
				info.in = in
				info.inSchema = in.root()
			}
			info.outType = out
		} else {
			info.entry = wc.resolveRef(st.Ref, KindDecisionTable)
			es := wc.entrySchemas(info.entry, st.Ref)
			info.in, info.out = es.input, es.output
			info.inSchema = es.input.root()
			if info.out != nil {
				info.outType = wc.ss.celType(info.out.root(), label)
			}
		}
	case StepSignal:
		if doc := wc.ss.fromSource(st.SignalSchema, label); doc != nil {
			info.outType = wc.ss.celType(doc.root(), label)
		}
	case StepHuman:
		data := types.DynType
		if st.Human != nil {
			if doc := wc.ss.fromSource(st.Human.Form, label+".data"); doc != nil {
				data = wc.ss.celType(doc.root(), label+".data")
			}
		}
		info.outType = wc.reg.defineStruct(label, map[string]*types.Type{
			"decision": types.StringType, "data": data, "completedBy": types.StringType,
		}, map[string]bool{"decision": true, "data": true, "completedBy": true})
	case StepAgent:
		info.outType = types.StringType
		if st.Agent != nil {
			if doc := wc.ss.fromSource(st.Agent.Output, label); doc != nil {
				info.outType = wc.ss.celType(doc.root(), label)
			}
			for _, tool := range st.Agent.Tools {
				wc.resolveRef(tool, KindAction)
			}
		}
	case StepForEach:
		info.outType = types.NewListType(types.DynType)
		if st.Collect == nil {
			info.outType = types.NullType
		}
	default:
		info.outType = types.NullType
	}
}

func (wc *wfCompiler) ctx(st *Step, sc *scope) exprCtx {
	return exprCtx{env: sc.env, visible: wc.flow.visible[st], steps: wc.t, what: "step " + st.ID}
}

func (wc *wfCompiler) steps(list []*Step, sc *scope) {
	for _, st := range list {
		wc.step(st, sc)
	}
}

func idOrNil(s *string) any {
	if s == nil || *s == "" {
		return nil
	}
	return *s
}

func (wc *wfCompiler) target(tg *Target) any {
	if tg == nil {
		return nil
	}
	return idOrNil(wc.flow.targets[tg])
}

func (wc *wfCompiler) step(st *Step, sc *scope) {
	node := map[string]any{
		"id":     st.ID,
		"kind":   string(st.Kind),
		"parent": nil,
		"branch": nil,
		"title":  nilIfEmpty(st.Title),
	}
	if st.parent != nil {
		node["parent"] = st.parent.ID
	}
	if st.branch != nil {
		node["branch"] = st.branch.Name
	}
	wc.nodes = append(wc.nodes, node)
	if st.Kind == "" {
		return
	}
	switch st.Kind {
	case StepSwitch, StepFail, StepSucceed:
	default:
		node["next"] = idOrNil(wc.flow.next[st])
	}
	ctx := wc.ctx(st, sc)
	info := wc.info[st]
	what := "step " + st.ID
	switch st.Kind {
	case StepAction:
		wc.actionStep(st, node, ctx, info)
	case StepDecision:
		if st.Ref != nil {
			node["ref"] = st.Ref.Text
		}
		node["table"] = nil
		if info.table != nil {
			node["table"] = info.table
		}
		node["with"] = wc.callInput(st, ctx, info, "decision table")
	case StepWorkflow:
		if st.Ref != nil {
			node["ref"] = st.Ref.Text
		}
		node["with"] = wc.callInput(st, ctx, info, "workflow")
		node["timeoutMs"] = durationMs(st.Timeout)
	case StepWait:
		node["duration"] = wc.compileField(st.Wait, ctx, fieldDuration, "the wait of "+what)
	case StepSignal:
		node["signal"] = st.Signal
		node["schema"] = schemaJSON(st.SignalSchema)
		node["deadlineMs"] = durationMs(st.Deadline)
		node["onTimeout"] = wc.onTimeout(st)
	case StepHuman:
		h := st.Human
		if h != nil {
			node["human"] = map[string]any{
				"title":       wc.compileField(h.Title, ctx, fieldString, "the title of "+what),
				"description": wc.compileField(h.Description, ctx, fieldString, "the description of "+what),
				"assignees":   wc.compileField(h.Assignees, ctx, fieldStringOrStringList, "the assignees of "+what),
				"form":        schemaJSON(h.Form),
				"decisions":   h.Decisions,
			}
		}
		node["deadlineMs"] = durationMs(st.Deadline)
		node["onTimeout"] = wc.onTimeout(st)
	case StepAgent:
		a := st.Agent
		if a != nil {
			tools := []any{}
			for _, t := range a.Tools {
				tools = append(tools, t.Text)
			}
			node["agent"] = map[string]any{
				"provider":     a.Provider,
				"model":        nilIfEmpty(a.Model),
				"instructions": nilIfEmpty(a.Instructions),
				"prompt":       wc.compileField(a.Prompt, ctx, fieldString, "the prompt of "+what),
				"tools":        tools,
				"output":       schemaJSON(a.Output),
				"maxTurns":     a.MaxTurns,
			}
		}
		node["timeoutMs"] = int64(defaultAgentTimeoutMs)
		if st.Timeout != nil {
			node["timeoutMs"] = st.Timeout.Ms
		}
	case StepForEach:
		wc.forEach(st, node, ctx, sc)
	case StepParallel:
		branches := []any{}
		for _, b := range st.Branches {
			var entry any
			if len(b.Steps) > 0 {
				entry = b.Steps[0].ID
			}
			branches = append(branches, map[string]any{"name": b.Name, "entry": entry})
		}
		node["branches"] = branches
		for _, b := range st.Branches {
			wc.steps(b.Steps, sc)
		}
	case StepSwitch:
		cases := []any{}
		for i, cs := range st.Cases {
			cases = append(cases, map[string]any{
				"when": wc.compileField(cs.When, ctx, fieldBool, fmt.Sprintf("case %d of %s", i+1, what)),
				"next": wc.target(cs.Next),
			})
		}
		node["cases"] = cases
		node["default"] = idOrNil(wc.flow.next[st])
	case StepSet:
		assign := []any{}
		for _, a := range st.Assignments {
			decl := wc.varDecl(a.Name)
			if decl == nil {
				c := wc.compiler
				var names []string
				if len(wc.w.Vars) <= maxSuggestCandidates {
					for _, v := range wc.w.Vars {
						names = append(names, v.Name)
					}
				}
				msg := "set assigns %q, which is not declared under vars"
				args := []any{a.Name}
				if s := suggest(a.Name, names); s != "" {
					msg += "; did you mean %q?"
					args = append(args, s)
				}
				c.diags.errorf(CodeUnknownVar, c.src.rangeOf(a.KeyNode), a.Path, msg, args...)
				continue
			}
			var target sview
			if decl.Schema.JSON != nil {
				target = wc.varView(decl)
			}
			assign = append(assign, map[string]any{
				"var":   a.Name,
				"value": wc.compileValue(a.Value, ctx, valueSpec{schema: target, label: "vars." + a.Name, what: "variable " + a.Name}),
			})
		}
		node["assign"] = assign
	case StepFail:
		node["code"] = st.FailCode
		node["message"] = wc.compileField(st.FailMessage, ctx, fieldString, "the message of "+what)
	case StepSucceed:
		var out sview
		if wc.w.Output != nil && wc.w.Output.JSON != nil {
			out = wc.outputView()
		}
		node["result"] = wc.compileValue(st.SucceedResult, ctx, valueSpec{schema: out, label: "output", what: "the workflow result"})
	}
}

// varView and outputView find the compiled schema docs again by their
// source node.
func (wc *wfCompiler) varView(v *VarDecl) sview { return wc.viewOf(v.Schema) }

func (wc *wfCompiler) outputView() sview { return wc.viewOf(wc.w.Output) }

func (wc *wfCompiler) viewOf(s *Schema) sview {
	if s == nil {
		return sview{}
	}
	return s.doc.root()
}

func (wc *wfCompiler) varDecl(name string) *VarDecl {
	if wc.varByName == nil {
		wc.varByName = map[string]*VarDecl{}
		for _, v := range wc.w.Vars {
			wc.varByName[v.Name] = v
		}
	}
	return wc.varByName[name]
}

func (wc *wfCompiler) onTimeout(st *Step) any {
	if st.OnTimeout == nil {
		return nil
	}
	return map[string]any{"next": wc.target(st.OnTimeout)}
}

// callInput compiles the with mapping of an action, decision or workflow
// step against the callee's input schema.
func (wc *wfCompiler) callInput(st *Step, ctx exprCtx, info *stepInfo, callee string) any {
	label := "input"
	if st.Ref != nil {
		label = st.Ref.Text + ".input"
	}
	what := fmt.Sprintf("the input of step %s", st.ID)
	if st.With == nil {
		if req := wc.ss.required(info.inSchema); len(req) > 0 {
			n := st.IDNode
			if n == nil {
				n = st.YAML
			}
			wc.diags.errorf(CodeSchemaMismatch, wc.src.rangeOf(n), st.Path, "step %s passes no input, but the %s requires %s", st.ID, callee, strings.Join(req, ", "))
		}
		return nil
	}
	return wc.compileValue(st.With, ctx, valueSpec{schema: info.inSchema, label: label, what: what})
}

func (wc *wfCompiler) actionStep(st *Step, node map[string]any, ctx exprCtx, info *stepInfo) {
	if st.Ref != nil {
		node["ref"] = st.Ref.Text
	}
	node["with"] = wc.callInput(st, ctx, info, "action")
	e := info.entry
	declared := ""
	if st.SideEffect != nil {
		declared = st.SideEffect.YAML.Value
	}
	effective := declared
	if e != nil {
		if declared != "" && declared != e.SideEffect {
			wc.diags.errorf(CodeSideEffect, wc.src.rangeOf(st.SideEffect.YAML), st.SideEffect.Path,
				"step %s declares side effect %s, but action %s is %s", st.ID, declared, st.Ref.Text, e.SideEffect)
		}
		effective = e.SideEffect
	}
	known := effective != ""
	if !known {
		effective = SideEffectUnsafe // unknown: assume the worst
	}
	node["sideEffect"] = effective
	node["retrySafe"] = effective != SideEffectUnsafe

	var timeout, deadline int64 = defaultActionTimeoutMs, 0
	if e != nil && e.TimeoutMs > 0 {
		timeout = e.TimeoutMs
	}
	if e != nil && e.DeadlineMs > 0 {
		deadline = e.DeadlineMs
	}
	if st.Timeout != nil {
		timeout = st.Timeout.Ms
	}
	if st.Deadline != nil {
		deadline = st.Deadline.Ms
		if deadline < timeout {
			wc.diags.errorf(CodeInvalidValue, wc.src.rangeOf(st.Deadline.YAML), st.Deadline.Path,
				"the deadline (%dms) of step %s is shorter than one attempt's timeout (%dms)", deadline, st.ID, timeout)
		}
	}
	node["timeoutMs"] = timeout
	if deadline > 0 {
		node["deadlineMs"] = deadline
	} else {
		node["deadlineMs"] = nil
	}
	var base *CatalogRetryPolicy
	if e != nil {
		base = e.Retry
	}
	node["retry"] = normalizeRetry(base, st.Retry, effective)
	if known && effective == SideEffectUnsafe && st.Retry != nil && st.Retry.MaxAttempts > 1 {
		wc.diags.warnf(CodeRetryUnsafe, wc.src.rangeOf(st.Retry.YAML), st.Retry.Path,
			"step %s retries an action whose side effect is unsafe: a retry after an unknown outcome may repeat the effect", st.ID)
	}
	if st.IdemKey != nil {
		if known && effective != SideEffectIdempotencyKey {
			wc.diags.warnf(CodeSideEffect, wc.src.rangeOf(st.IdemKey.YAML), st.IdemKey.Path,
				"idempotencyKey is only used by actions whose side effect is idempotency_key; this one is %s", effective)
		}
		node["idempotencyKey"] = wc.compileField(st.IdemKey, ctx, fieldString, "the idempotency key of step "+st.ID)
	} else {
		node["idempotencyKey"] = nil
	}
}

// normalizeRetry merges the defaults, the action's policy and the step's
// overrides into one explicit policy.
func normalizeRetry(base *CatalogRetryPolicy, r *Retry, sideEffect string) map[string]any {
	p := CatalogRetryPolicy{MaxAttempts: defaultMaxAttempts, InitialIntervalMs: defaultInitialIntervalMs,
		BackoffCoefficient: defaultBackoff, MaxIntervalMs: defaultMaxIntervalMs}
	if sideEffect == SideEffectUnsafe {
		p.MaxAttempts = 1 // never repeat an unsafe effect unless asked to
	}
	if base != nil {
		if base.MaxAttempts > 0 {
			p.MaxAttempts = base.MaxAttempts
		}
		if base.InitialIntervalMs > 0 {
			p.InitialIntervalMs = base.InitialIntervalMs
		}
		if base.BackoffCoefficient >= 1 {
			p.BackoffCoefficient = base.BackoffCoefficient
		}
		if base.MaxIntervalMs > 0 {
			p.MaxIntervalMs = base.MaxIntervalMs
		}
		p.NonRetryable = base.NonRetryable
	}
	if r != nil {
		if r.MaxAttempts > 0 {
			p.MaxAttempts = r.MaxAttempts
		}
		if r.InitialIntervalMs > 0 {
			p.InitialIntervalMs = r.InitialIntervalMs
		}
		if r.BackoffCoefficient >= 1 {
			p.BackoffCoefficient = r.BackoffCoefficient
		}
		if r.MaxIntervalMs > 0 {
			p.MaxIntervalMs = r.MaxIntervalMs
		}
		if r.NonRetryable != nil {
			p.NonRetryable = r.NonRetryable
		}
	}
	if p.MaxIntervalMs < p.InitialIntervalMs {
		p.MaxIntervalMs = p.InitialIntervalMs
	}
	return map[string]any{
		"maxAttempts":        p.MaxAttempts,
		"initialIntervalMs":  p.InitialIntervalMs,
		"backoffCoefficient": p.BackoffCoefficient,
		"maxIntervalMs":      p.MaxIntervalMs,
		"nonRetryable":       stringsOrEmpty(p.NonRetryable),
	}
}

func (wc *wfCompiler) forEach(st *Step, node map[string]any, ctx exprCtx, sc *scope) {
	what := "the items of step " + st.ID
	itemType := types.DynType
	if st.Items != nil {
		n := st.Items.YAML
		if isExpr(n) {
			// The item type is needed to declare the loop variable, so this
			// expression is checked now rather than with the others.
			j := wc.checkNow(ctx, n, st.Items.Path, fieldCheck(fieldList, what))
			if j.checked != nil && j.checked.OutputType().Kind() == types.ListKind {
				itemType = param(j.checked.OutputType(), 0)
			}
			node["items"] = map[string]any{"expr": exprText(n)}
		} else {
			node["items"] = wc.compileField(st.Items, ctx, fieldList, what)
			if n.Kind == yaml.SequenceNode {
				itemType = literalListElemType(n)
			}
		}
	}
	node["as"] = st.As
	node["index"] = st.IndexName
	node["concurrency"] = st.Concurrency
	var body any
	if len(st.Body) > 0 {
		body = st.Body[0].ID
	}
	node["body"] = body

	inner := &scope{env: sc.env, loopVars: append(append([]string(nil), sc.loopVars...), st.As, st.IndexName)}
	for _, name := range []string{st.As, st.IndexName} {
		if contains(sc.loopVars, name) {
			wc.diags.errorf(CodeInvalidID, wc.src.rangeOf(st.KindNode), st.Path,
				"loop variable %q is already declared by an enclosing forEach; choose another name with as/index", name)
		}
	}
	env, err := wc.loopEnv(sc.env, st.As, st.IndexName, itemType)
	if err != nil {
		wc.diags.errorf(CodeInvalidID, wc.src.rangeOf(st.KindNode), st.Path, "cannot declare loop variables: %v", firstLine(err.Error()))
	} else {
		inner.env = env
	}
	wc.steps(st.Body, inner)
	node["collect"] = nil
	if st.Collect != nil {
		cctx := exprCtx{env: inner.env, visible: wc.flow.endVisible[st], steps: wc.t, what: "the collect of step " + st.ID}
		node["collect"] = wc.compileValue(st.Collect, cctx, valueSpec{what: "the collect of step " + st.ID})
	}
}

// literalListElemType is the element type of a literal list when all its
// elements are scalars of one type.
func literalListElemType(n *yaml.Node) *types.Type {
	var t *types.Type
	for _, e := range n.Content {
		var et *types.Type
		if e.Kind != yaml.ScalarNode || isExpr(e) {
			return types.DynType
		}
		switch e.ShortTag() {
		case "!!str", "!!timestamp":
			et = types.StringType
		case "!!int":
			et = types.IntType
		case "!!float":
			et = types.DoubleType
		case "!!bool":
			et = types.BoolType
		default:
			return types.DynType
		}
		if t != nil && t.Kind() != et.Kind() {
			return types.DynType
		}
		t = et
	}
	if t == nil {
		return types.DynType
	}
	return t
}
