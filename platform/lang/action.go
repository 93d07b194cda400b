package lang

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
)

// builtinAdapters are the connector adapters every installation has.
var builtinAdapters = []string{"http"}

// httpConfigSchema is the configuration of the built-in http adapter.
const httpConfigSchema = `{"type":"object","required":["method","url"],"additionalProperties":false,
"properties":{"method":{"enum":["GET","POST","PUT","PATCH","DELETE","HEAD"]},"url":{"type":"string","minLength":1},
"headers":{"type":"object","additionalProperties":{"type":"string"}},
"query":{"type":"object","additionalProperties":{"type":"string"}},"body":{}}}`

func (c *compiler) compileAction(a *Action) map[string]any {
	inDoc := c.ss.fromSource(a.Input, "input")
	outDoc := c.ss.fromSource(a.Output, "output")
	inputType := types.DynType
	if inDoc != nil {
		inputType = c.ss.celType(inDoc.root(), "input")
	}
	opts := append(ExprEnvOptions(), cel.CustomTypeProvider(c.reg),
		cel.Variable("input", inputType),
		cel.Variable("connection", types.NewMapType(types.StringType, types.DynType)),
	)
	env, err := cel.NewEnv(opts...)
	if err != nil {
		c.diags.errorf(CodeInternal, Range{}, "", "create expression environment: %v", err)
		return nil
	}
	ctx := exprCtx{env: env, what: "the action configuration"}
	var binding map[string]any
	switch {
	case a.Worker != "":
		binding = map[string]any{"type": "worker", "queue": a.Worker}
		if c.cat != nil && !c.cat.tasks[a.Worker] {
			c.diags.warnf(CodeRefUnknown, c.src.rangeOf(a.WorkerNode), "/worker",
				"task queue %q is not in the catalog lock; no worker may be polling it yet", a.Worker)
		}
	case a.ConnRef != nil:
		e := c.resolveRef(a.ConnRef, KindConnector)
		if e != nil && len(e.Operations) > 0 && !contains(e.Operations, a.Operation) {
			c.diags.errorf(CodeRefUnknown, c.src.rangeOf(a.OpNode), "/operation",
				"connector %s has no operation %q", a.ConnRef.Text, a.Operation)
		}
		binding = map[string]any{"type": "connector", "ref": a.ConnRef.Text, "operation": a.Operation,
			"config": c.compileValue(a.Config, ctx, valueSpec{what: "the action configuration", label: "config"})}
	case a.Connector != nil:
		name := a.Connector.YAML.Value
		c.checkAdapter(name, a.Connector)
		spec := valueSpec{what: "the " + name + " configuration", label: "config"}
		if name == "http" {
			spec.schema = c.builtinSchema(httpConfigSchema)
			if a.Config == nil {
				c.diags.errorf(CodeMissingKey, c.src.rangeOf(a.Connector.YAML), a.Connector.Path, "the http adapter needs config with method and url")
			}
		}
		binding = map[string]any{"type": "adapter", "adapter": name, "config": c.compileValue(a.Config, ctx, spec)}
	}
	var timeout int64 = defaultActionTimeoutMs
	if a.Timeout != nil {
		timeout = a.Timeout.Ms
	}
	var deadline any
	if a.Deadline != nil {
		deadline = a.Deadline.Ms
		if a.Deadline.Ms < timeout {
			c.diags.errorf(CodeInvalidValue, c.src.rangeOf(a.Deadline.YAML), a.Deadline.Path, "the deadline is shorter than one attempt's timeout")
		}
	}
	if a.SideEffect == SideEffectUnsafe && a.Retry != nil && a.Retry.MaxAttempts > 1 {
		c.diags.warnf(CodeRetryUnsafe, c.src.rangeOf(a.Retry.YAML), a.Retry.Path,
			"the action's side effect is unsafe, yet its default policy retries it: a retry after an unknown outcome may repeat the effect")
	}
	sideEffect := a.SideEffect
	if sideEffect == "" {
		sideEffect = SideEffectUnsafe
	}
	return map[string]any{
		"format":      ActionFormat,
		"kind":        KindAction,
		"id":          a.ID,
		"version":     a.Version,
		"title":       nilIfEmpty(a.Title),
		"description": nilIfEmpty(a.Description),
		"input":       schemaJSON(a.Input),
		"output":      schemaJSON(a.Output),
		"secrets": map[string]any{
			"input":  stringsOrEmpty(c.ss.secretPointers(inDoc.root())),
			"output": stringsOrEmpty(c.ss.secretPointers(outDoc.root())),
		},
		"sideEffect": sideEffect,
		"retrySafe":  sideEffect != SideEffectUnsafe,
		"timeoutMs":  timeout,
		"deadlineMs": deadline,
		"retry":      normalizeRetry(nil, a.Retry, sideEffect),
		"binding":    binding,
		"references": c.references(),
		"expressions": map[string]any{
			"language":  "cel",
			"libraries": exprLibraries,
			"costLimit": ExprCostLimit,
			"variables": []string{"input", "connection"},
		},
	}
}

// checkAdapter checks that an adapter is built in or installed.
func (c *compiler) checkAdapter(name string, at *Node) {
	if contains(builtinAdapters, name) {
		return
	}
	if c.cat == nil {
		c.unresolved = true
		c.diags.warnf(CodeRefUnresolved, c.src.rangeOf(at.YAML), at.Path,
			"adapter %q is not built in and cannot be checked without a catalog lock; the result is partial", name)
		return
	}
	if !c.cat.adapters[name] {
		c.unresolved = true
		c.diags.errorf(CodeRefUnknown, c.src.rangeOf(at.YAML), at.Path,
			"adapter %q is neither built in (%s) nor installed according to the catalog lock", name, joinComma(builtinAdapters))
	}
}

func joinComma(l []string) string {
	out := ""
	for i, s := range l {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}
