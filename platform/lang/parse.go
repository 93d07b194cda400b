package lang

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	commonStepKeys = []string{"id", "title", "description"}
	// stepKeys lists, per kind, the keys a step of that kind accepts besides
	// the common ones. The kind key itself comes first.
	stepKeys = map[StepKind][]string{
		StepAction:   {"action", "with", "timeout", "deadline", "retry", "sideEffect", "idempotencyKey", "next"},
		StepDecision: {"decision", "with", "next"},
		StepWait:     {"wait", "next"},
		StepSignal:   {"signal", "schema", "deadline", "onTimeout", "next"},
		StepHuman:    {"human", "deadline", "onTimeout", "next"},
		StepAgent:    {"agent", "timeout", "next"},
		StepWorkflow: {"workflow", "with", "timeout", "next"},
		StepForEach:  {"forEach", "as", "index", "concurrency", "steps", "collect", "next"},
		StepParallel: {"parallel", "next"},
		StepSwitch:   {"switch", "default"},
		StepSet:      {"set", "next"},
		StepFail:     {"fail"},
		StepSucceed:  {"succeed"},
	}
	workflowKeys  = []string{"kind", "id", "version", "title", "description", "input", "output", "vars", "timeout", "steps", "result"}
	actionKeys    = []string{"kind", "id", "version", "title", "description", "input", "output", "sideEffect", "timeout", "deadline", "retry", "connector", "operation", "config", "worker"}
	connectorKeys = []string{"kind", "id", "version", "title", "description", "adapter", "capabilities", "connection", "actions"}
	retryKeys     = []string{"maxAttempts", "initialInterval", "backoffCoefficient", "maxInterval", "nonRetryable"}
	// decisionMetaKeys are the language's own keys of a decision table
	// document; the rest belongs to package decision's format.
	decisionMetaKeys  = []string{"kind", "id", "version", "title", "description"}
	decisionTableKeys = []string{"hitPolicy", "aggregation", "inputs", "outputs", "rules", "default"}
)

// Parse parses a definition document into its AST. The diagnostics are the
// structural ones (YAML, unknown keys, value types); Compile adds the rest.
func Parse(src []byte, filename string) (*File, []Diagnostic) {
	diags := &diagList{file: filename}
	s := newSource(src)
	var f *File
	guard(diags, func() {
		f = parseSource(src, s, diags)
	})
	out, _ := diags.finish(false)
	return f, out
}

func parseSource(src []byte, s *source, diags *diagList) *File {
	root := parseYAML(src, s, diags)
	if root == nil {
		return nil
	}
	d := &decoder{src: s, diags: diags}
	return d.file(root)
}

func (d *decoder) file(root *yaml.Node) *File {
	if root.Kind != yaml.MappingNode {
		d.diags.errorf(CodeType, d.src.rangeOf(root), "", "a definition must be a YAML mapping with a kind key")
		return nil
	}
	var kindNode *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "kind" {
			kindNode = root.Content[i+1]
		}
	}
	kinds := []string{KindWorkflow, KindAction, KindConnector, KindDecisionTable}
	if kindNode == nil {
		d.diags.errorf(CodeKind, d.src.rangeOf(firstKey(root)), "", "missing key \"kind\"; use one of %s", strings.Join(kinds, ", "))
		return nil
	}
	if !isString(kindNode) || !contains(kinds, kindNode.Value) {
		d.diags.errorf(CodeKind, d.src.rangeOf(kindNode), "/kind", "unknown kind %q; use one of %s", kindNode.Value, strings.Join(kinds, ", "))
		return nil
	}
	f := &File{Kind: kindNode.Value, Root: root}
	switch f.Kind {
	case KindWorkflow:
		f.Workflow = d.workflow(root)
	case KindAction:
		f.Action = d.action(root)
	case KindConnector:
		f.Connector = d.connector(root)
	case KindDecisionTable:
		f.DecisionTable = d.decisionTable(root)
	}
	return f
}

func (d *decoder) workflow(root *yaml.Node) *Workflow {
	o := d.object(root, "", "workflow", workflowKeys)
	w := &Workflow{Meta: d.meta(o, "workflow")}
	w.Input = d.schema(o, "input")
	w.Output = d.schema(o, "output")
	w.Timeout = d.duration(o, "timeout", "workflow", true)
	w.Result = d.value(o, "result")
	if vn := o.get("vars"); vn != nil {
		if vn.Kind != yaml.MappingNode {
			d.diags.errorf(CodeType, d.src.rangeOf(vn), o.sub("vars"), "vars must be a mapping of variable names to JSON Schemas")
		} else {
			for i := 0; i+1 < len(vn.Content); i += 2 {
				k, v := vn.Content[i], vn.Content[i+1]
				p := joinPath(o.sub("vars"), k.Value)
				if !validIdent(k.Value) || contains(reservedNames, k.Value) {
					d.diags.errorf(CodeInvalidID, d.src.rangeOf(k), p, "variable name %q must be an identifier (letters, digits, _) that is not reserved", k.Value)
					continue
				}
				w.Vars = append(w.Vars, &VarDecl{Node: Node{YAML: k, Path: p}, Name: k.Value, Schema: &Schema{Node: Node{YAML: v, Path: p}}})
			}
		}
	}
	counter := 0
	if sn := o.get("steps"); sn != nil {
		w.Steps = d.steps(sn, o.sub("steps"), nil, nil, &counter)
	} else if o != nil {
		d.missing(o, "steps", "workflow")
	}
	return w
}

// reservedNames are the expression variables; loop variables and workflow
// variables may not shadow them.
var reservedNames = []string{"input", "steps", "vars", "now", "run", "connection"}

func (d *decoder) steps(n *yaml.Node, path string, parent *Step, branch *Branch, counter *int) []*Step {
	if n.Kind != yaml.SequenceNode {
		d.diags.errorf(CodeType, d.src.rangeOf(n), path, "steps must be a list of steps")
		return nil
	}
	if len(n.Content) == 0 {
		d.diags.errorf(CodeInvalidValue, d.src.rangeOf(n), path, "a step list needs at least one step")
		return nil
	}
	var list []*Step
	for i, c := range n.Content {
		*counter++
		if *counter > MaxSteps {
			if *counter == MaxSteps+1 {
				d.diags.errorf(CodeTooLarge, d.src.rangeOf(c), joinPath(path, strconv.Itoa(i)), "a workflow may have at most %d steps", MaxSteps)
			}
			return list
		}
		st := d.step(c, joinPath(path, strconv.Itoa(i)), counter)
		if st == nil {
			continue
		}
		st.parent, st.branch = parent, branch
		list = append(list, st)
	}
	for i, st := range list {
		st.list, st.index = list, i
	}
	return list
}

func (d *decoder) step(n *yaml.Node, path string, counter *int) *Step {
	if n.Kind != yaml.MappingNode {
		d.diags.errorf(CodeType, d.src.rangeOf(n), path, "a step must be a mapping")
		return nil
	}
	// Find the kind key first so that unknown keys are judged per kind.
	var found []StepKind
	var kindKeys []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		for _, sk := range stepKinds {
			if k.Value == string(sk) {
				found = append(found, sk)
				kindKeys = append(kindKeys, k)
			}
		}
	}
	st := &Step{Node: Node{YAML: n, Path: path}}
	idNode := mappingValue(n, "id")
	if idNode == nil {
		d.diags.errorf(CodeMissingKey, d.src.rangeOf(firstKey(n)), path, "step is missing required key \"id\"")
	} else if !isString(idNode) || !validIdent(idNode.Value) {
		d.diags.errorf(CodeInvalidID, d.src.rangeOf(idNode), joinPath(path, "id"),
			"step id %q must be an identifier: a letter or _, then letters, digits or _, at most 64 characters, not a CEL reserved word or \"end\"", idNode.Value)
	} else {
		st.ID, st.IDNode = idNode.Value, idNode
	}
	switch len(found) {
	case 0:
		names := make([]string, len(stepKinds))
		for i, k := range stepKinds {
			names[i] = string(k)
		}
		d.diags.errorf(CodeStepKind, d.src.rangeOf(firstKey(n)), path, "step has no kind key; give it exactly one of %s", strings.Join(names, ", "))
		return st
	case 1:
	default:
		d.diags.errorf(CodeStepKind, d.src.rangeOf(kindKeys[1]), path, "step has more than one kind key (%s and %s)", found[0], found[1])
		return st
	}
	st.Kind = found[0]
	what := fmt.Sprintf("%s step", st.Kind)
	allowed := append(append([]string(nil), commonStepKeys...), stepKeys[st.Kind]...)
	o := d.object(n, path, what, allowed)
	st.KindNode = o.get(string(st.Kind))
	st.Title, _ = d.str(o, "title", what, false)
	st.Description, _ = d.str(o, "description", what, false)
	st.Next = d.target(o, "next", what)
	kp := o.sub(string(st.Kind))
	switch st.Kind {
	case StepAction:
		st.Ref = d.reference(o, "action", what)
		st.With = d.value(o, "with")
		st.Timeout = d.duration(o, "timeout", what, true)
		st.Deadline = d.duration(o, "deadline", what, true)
		st.Retry = d.retry(o, what)
		if _, n := d.enum(o, "sideEffect", what, sideEffects, false); n != nil {
			st.SideEffect = &Node{YAML: n, Path: o.sub("sideEffect")}
		}
		st.IdemKey = d.value(o, "idempotencyKey")
	case StepDecision:
		if st.KindNode.Kind == yaml.MappingNode {
			st.InlineTable = st.KindNode
		} else {
			st.Ref = d.reference(o, "decision", what)
		}
		st.With = d.value(o, "with")
	case StepWorkflow:
		st.Ref = d.reference(o, "workflow", what)
		st.With = d.value(o, "with")
		st.Timeout = d.duration(o, "timeout", what, true)
	case StepWait:
		st.Wait = d.value(o, "wait")
	case StepSignal:
		name, nn := d.str(o, "signal", what, true)
		if nn != nil && (len(name) > 128 || !signalNameRE.MatchString(name)) {
			d.diags.errorf(CodeInvalidID, d.src.rangeOf(nn), kp, "signal name %q must start with a letter and contain only letters, digits, '_', '.' or '-'", name)
		}
		st.Signal = name
		st.SignalSchema = d.schema(o, "schema")
		st.Deadline = d.duration(o, "deadline", what, true)
		st.OnTimeout = d.target(o, "onTimeout", what)
	case StepHuman:
		st.Human = d.human(st.KindNode, kp)
		st.Deadline = d.duration(o, "deadline", what, true)
		st.OnTimeout = d.target(o, "onTimeout", what)
	case StepAgent:
		st.Agent = d.agent(st.KindNode, kp)
		st.Timeout = d.duration(o, "timeout", what, true)
	case StepForEach:
		st.Items = d.value(o, "forEach")
		st.As, st.IndexName = "item", "index"
		for _, lv := range []struct {
			key string
			dst *string
		}{{"as", &st.As}, {"index", &st.IndexName}} {
			if v, vn := d.str(o, lv.key, what, false); vn != nil {
				if !validIdent(v) || contains(reservedNames, v) {
					d.diags.errorf(CodeInvalidID, d.src.rangeOf(vn), o.sub(lv.key), "loop variable name %q must be an identifier that is not reserved", v)
				} else {
					*lv.dst = v
				}
			}
		}
		if st.As == st.IndexName {
			d.diags.errorf(CodeInvalidValue, d.src.rangeOf(o.node), path, "the item and index variables must have different names")
		}
		st.Concurrency = 1
		if c, ok := d.integer(o, "concurrency", what, 1, 1000); ok {
			st.Concurrency = int(c)
		}
		st.Collect = d.value(o, "collect")
		if sn := o.get("steps"); sn != nil {
			st.Body = d.steps(sn, o.sub("steps"), st, nil, counter)
		} else {
			d.missing(o, "steps", what)
		}
	case StepParallel:
		st.Branches = d.branches(st, st.KindNode, kp, counter)
	case StepSwitch:
		st.Cases = d.cases(st.KindNode, kp)
		st.Default = d.target(o, "default", what)
	case StepSet:
		st.Assignments = d.assignments(st.KindNode, kp)
	case StepFail:
		fo := d.object(st.KindNode, kp, "fail", []string{"code", "message"})
		if fo != nil {
			code, cn := d.str(fo, "code", "fail", true)
			if cn != nil && !errorCodeRE.MatchString(code) {
				d.diags.errorf(CodeInvalidValue, d.src.rangeOf(cn), fo.sub("code"), "error code %q must be UPPER_SNAKE_CASE", code)
			}
			st.FailCode = code
			st.FailMessage = d.value(fo, "message")
		}
	case StepSucceed:
		if !isNull(st.KindNode) {
			so := d.object(st.KindNode, kp, "succeed", []string{"result"})
			st.SucceedResult = d.value(so, "result")
		}
	}
	return st
}

func isNull(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func (d *decoder) retry(o *object, what string) *Retry {
	n := o.get("retry")
	if n == nil {
		return nil
	}
	ro := d.object(n, o.sub("retry"), "retry policy", retryKeys)
	if ro == nil {
		return nil
	}
	r := &Retry{Node: Node{YAML: n, Path: o.sub("retry")}}
	if v, ok := d.integer(ro, "maxAttempts", "retry policy", 1, 100); ok {
		r.MaxAttempts = int(v)
	}
	if dur := d.duration(ro, "initialInterval", "retry policy", true); dur != nil {
		r.InitialIntervalMs = dur.Ms
	}
	if dur := d.duration(ro, "maxInterval", "retry policy", true); dur != nil {
		r.MaxIntervalMs = dur.Ms
	}
	if f, ok := d.number(ro, "backoffCoefficient", "retry policy", 1, 100); ok {
		r.BackoffCoefficient = f
	}
	codes, nodes := d.strList(ro, "nonRetryable", "retry policy")
	for i, c := range codes {
		if !errorCodeRE.MatchString(c) {
			d.diags.errorf(CodeInvalidValue, d.src.rangeOf(nodes[i]), ro.sub("nonRetryable"), "error code %q must be UPPER_SNAKE_CASE", c)
		}
	}
	r.NonRetryable = codes
	if r.InitialIntervalMs > 0 && r.MaxIntervalMs > 0 && r.MaxIntervalMs < r.InitialIntervalMs {
		d.diags.errorf(CodeInvalidValue, d.src.rangeOf(ro.get("maxInterval")), ro.sub("maxInterval"), "maxInterval must not be shorter than initialInterval")
	}
	return r
}

func (d *decoder) human(n *yaml.Node, path string) *HumanTask {
	o := d.object(n, path, "human task", []string{"title", "description", "assignees", "form", "decisions"})
	if o == nil {
		return nil
	}
	h := &HumanTask{Node: Node{YAML: n, Path: path}}
	h.Title = d.value(o, "title")
	if h.Title == nil {
		d.missing(o, "title", "human task")
	}
	h.Description = d.value(o, "description")
	h.Assignees = d.value(o, "assignees")
	if h.Assignees == nil {
		d.missing(o, "assignees", "human task")
	}
	h.Form = d.schema(o, "form")
	decisions, nodes := d.strList(o, "decisions", "human task")
	seen := map[string]bool{}
	for i, dec := range decisions {
		if !validIdent(dec) {
			d.diags.errorf(CodeInvalidID, d.src.rangeOf(nodes[i]), o.sub("decisions"), "decision %q must be an identifier", dec)
		}
		if seen[dec] {
			d.diags.errorf(CodeDuplicateID, d.src.rangeOf(nodes[i]), o.sub("decisions"), "decision %q is listed twice", dec)
		}
		seen[dec] = true
	}
	if o.has("decisions") && len(decisions) == 0 {
		d.diags.errorf(CodeInvalidValue, d.src.rangeOf(o.get("decisions")), o.sub("decisions"), "a human task needs at least one decision")
	}
	if len(decisions) == 0 {
		decisions = []string{"complete"}
	}
	h.Decisions = decisions
	return h
}

func (d *decoder) agent(n *yaml.Node, path string) *AgentTask {
	o := d.object(n, path, "agent task", []string{"provider", "model", "instructions", "prompt", "tools", "output", "maxTurns"})
	if o == nil {
		return nil
	}
	a := &AgentTask{Node: Node{YAML: n, Path: path}, MaxTurns: 20}
	a.Provider, _ = d.str(o, "provider", "agent task", true)
	a.Model, _ = d.str(o, "model", "agent task", false)
	a.Instructions, _ = d.str(o, "instructions", "agent task", false)
	a.Prompt = d.value(o, "prompt")
	if a.Prompt == nil {
		d.missing(o, "prompt", "agent task")
	}
	a.Output = d.schema(o, "output")
	if v, ok := d.integer(o, "maxTurns", "agent task", 1, 1000); ok {
		a.MaxTurns = int(v)
	}
	if tn := o.get("tools"); tn != nil {
		if tn.Kind != yaml.SequenceNode {
			d.diags.errorf(CodeType, d.src.rangeOf(tn), o.sub("tools"), "tools must be a list of action references")
		} else {
			for i, c := range tn.Content {
				p := joinPath(o.sub("tools"), strconv.Itoa(i))
				if r := d.refNode(c, p, "agent tool"); r != nil {
					a.Tools = append(a.Tools, r)
				}
			}
		}
	}
	return a
}

func (d *decoder) branches(st *Step, n *yaml.Node, path string, counter *int) []*Branch {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.diags.errorf(CodeType, d.src.rangeOf(n), path, "parallel must be a non-empty list of branches")
		return nil
	}
	var out []*Branch
	for i, c := range n.Content {
		p := joinPath(path, strconv.Itoa(i))
		o := d.object(c, p, "parallel branch", []string{"name", "steps"})
		if o == nil {
			continue
		}
		b := &Branch{Node: Node{YAML: c, Path: p}}
		name, nn := d.str(o, "name", "parallel branch", true)
		if nn != nil && !validIdent(name) {
			d.diags.errorf(CodeInvalidID, d.src.rangeOf(nn), o.sub("name"), "branch name %q must be an identifier", name)
		} else {
			b.Name, b.NameNode = name, nn
		}
		if sn := o.get("steps"); sn != nil {
			b.Steps = d.steps(sn, o.sub("steps"), st, b, counter)
		} else {
			d.missing(o, "steps", "parallel branch")
		}
		out = append(out, b)
	}
	return out
}

func (d *decoder) cases(n *yaml.Node, path string) []*Case {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.diags.errorf(CodeType, d.src.rangeOf(n), path, "switch must be a non-empty list of cases")
		return nil
	}
	var out []*Case
	for i, c := range n.Content {
		p := joinPath(path, strconv.Itoa(i))
		o := d.object(c, p, "switch case", []string{"when", "next"})
		if o == nil {
			continue
		}
		cs := &Case{Node: Node{YAML: c, Path: p}, When: d.value(o, "when"), Next: d.target(o, "next", "switch case")}
		if cs.When == nil {
			d.missing(o, "when", "switch case")
		}
		if cs.Next == nil && !o.has("next") {
			d.missing(o, "next", "switch case")
		}
		out = append(out, cs)
	}
	return out
}

func (d *decoder) assignments(n *yaml.Node, path string) []*Assignment {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		d.diags.errorf(CodeType, d.src.rangeOf(n), path, "set must be a non-empty mapping of variable names to values")
		return nil
	}
	var out []*Assignment
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := joinPath(path, k.Value)
		out = append(out, &Assignment{Node: Node{YAML: k, Path: p}, KeyNode: k, Name: k.Value, Value: &Value{Node{YAML: v, Path: p}}})
	}
	return out
}

var refRE = regexp.MustCompile(`^([a-z0-9][a-z0-9._-]*(?:/[a-z0-9][a-z0-9._-]*)*)@([1-9][0-9]{0,8})$`)

// ParseReference splits "id@version" into its parts.
func ParseReference(s string) (id string, version int, err error) {
	m := refRE.FindStringSubmatch(s)
	if m == nil || len(m[1]) > 128 {
		return "", 0, fmt.Errorf("reference %q must be <id>@<version>, e.g. acme/send-email@2", s)
	}
	v, err := strconv.Atoi(m[2])
	if err != nil {
		return "", 0, fmt.Errorf("reference %q has an invalid version: %w", s, err)
	}
	return m[1], v, nil
}

func (d *decoder) reference(o *object, key, what string) *Reference {
	n := o.get(key)
	if n == nil {
		return nil
	}
	return d.refNode(n, o.sub(key), what)
}

func (d *decoder) refNode(n *yaml.Node, path, what string) *Reference {
	if !isString(n) {
		d.diags.errorf(CodeRefSyntax, d.src.rangeOf(n), path, "%s: a reference must be a string <id>@<version>", what)
		return nil
	}
	id, v, err := ParseReference(n.Value)
	if err != nil {
		d.diags.errorf(CodeRefSyntax, d.src.rangeOf(n), path, "%s: %v", what, err)
		return nil
	}
	return &Reference{Node: Node{YAML: n, Path: path}, Text: n.Value, ID: id, Version: v}
}

func (d *decoder) action(root *yaml.Node) *Action {
	o := d.object(root, "", "action", actionKeys)
	a := &Action{Meta: d.meta(o, "action")}
	a.Input = d.schema(o, "input")
	a.Output = d.schema(o, "output")
	a.SideEffect, _ = d.enum(o, "sideEffect", "action", sideEffects, true)
	a.Timeout = d.duration(o, "timeout", "action", true)
	a.Deadline = d.duration(o, "deadline", "action", true)
	a.Retry = d.retry(o, "action")
	a.Operation, a.OpNode = d.str(o, "operation", "action", false)
	a.Config = d.value(o, "config")
	a.Worker, a.WorkerNode = d.str(o, "worker", "action", false)
	if cn := o.get("connector"); cn != nil {
		a.Connector = &Node{YAML: cn, Path: o.sub("connector")}
		if isString(cn) && strings.Contains(cn.Value, "@") {
			a.ConnRef = d.refNode(cn, o.sub("connector"), "action connector")
		} else if !isString(cn) || !identRE.MatchString(cn.Value) {
			d.diags.errorf(CodeRefSyntax, d.src.rangeOf(cn), o.sub("connector"), "connector must be a built-in adapter name (e.g. http) or a connector reference <id>@<version>")
			a.Connector = nil
		}
	}
	switch {
	case o != nil && o.has("connector") && o.has("worker"):
		d.diags.errorf(CodeInvalidValue, d.src.rangeOf(o.keys["worker"]), o.sub("worker"), "an action is bound either to a connector or to a worker task queue, not both")
	case o != nil && !o.has("connector") && !o.has("worker"):
		d.diags.errorf(CodeMissingKey, d.keyOrNodeRange(o), "", "action needs a binding: connector (e.g. http) or worker (a task queue)")
	}
	if a.Worker != "" && !signalNameRE.MatchString(a.Worker) {
		d.diags.errorf(CodeInvalidID, d.src.rangeOf(o.get("worker")), o.sub("worker"), "task queue name %q must start with a letter and contain only letters, digits, '_', '.' or '-'", a.Worker)
	}
	if a.ConnRef != nil && a.Operation == "" && o.get("operation") == nil {
		d.missing(o, "operation", "action bound to a connector manifest")
	}
	if a.ConnRef == nil && o.has("operation") {
		d.diags.errorf(CodeInvalidValue, d.src.rangeOf(o.keys["operation"]), o.sub("operation"), "operation is only used with a connector manifest reference")
	}
	if a.Worker != "" && !o.has("connector") && o.has("config") {
		d.diags.errorf(CodeInvalidValue, d.src.rangeOf(o.keys["config"]), o.sub("config"), "config is only used with a connector binding; a worker receives the action input")
	}
	return a
}

func (d *decoder) connector(root *yaml.Node) *Connector {
	o := d.object(root, "", "connector", connectorKeys)
	c := &Connector{Meta: d.meta(o, "connector")}
	c.Adapter, c.AdapterNode = d.str(o, "adapter", "connector", true)
	if c.AdapterNode != nil && !identRE.MatchString(c.Adapter) {
		d.diags.errorf(CodeInvalidID, d.src.rangeOf(c.AdapterNode), o.sub("adapter"), "adapter %q must be an identifier", c.Adapter)
	}
	caps, capNodes := d.strList(o, "capabilities", "connector")
	seen := map[string]bool{}
	for i, cp := range caps {
		if seen[cp] {
			d.diags.errorf(CodeDuplicateID, d.src.rangeOf(capNodes[i]), o.sub("capabilities"), "capability %q is listed twice", cp)
		}
		seen[cp] = true
	}
	c.Capabilities = caps
	c.Connection = d.schema(o, "connection")
	an := o.get("actions")
	if an == nil {
		if o != nil {
			d.missing(o, "actions", "connector")
		}
		return c
	}
	if an.Kind != yaml.SequenceNode || len(an.Content) == 0 {
		d.diags.errorf(CodeType, d.src.rangeOf(an), o.sub("actions"), "actions must be a non-empty list")
		return c
	}
	names := map[string]*yaml.Node{}
	for i, n := range an.Content {
		p := joinPath(o.sub("actions"), strconv.Itoa(i))
		ao := d.object(n, p, "connector action", []string{"name", "title", "description", "input", "output", "sideEffect"})
		if ao == nil {
			continue
		}
		ca := &ConnectorAction{Node: Node{YAML: n, Path: p}}
		ca.Name, ca.NameNode = d.str(ao, "name", "connector action", true)
		if ca.NameNode != nil {
			if !identRE.MatchString(ca.Name) {
				d.diags.errorf(CodeInvalidID, d.src.rangeOf(ca.NameNode), ao.sub("name"), "action name %q must be an identifier", ca.Name)
			} else if first, dup := names[ca.Name]; dup {
				d.diags.errorf(CodeDuplicateID, d.src.rangeOf(ca.NameNode), ao.sub("name"), "action %q is already defined at line %d", ca.Name, first.Line)
			} else {
				names[ca.Name] = ca.NameNode
			}
		}
		ca.Title, _ = d.str(ao, "title", "connector action", false)
		ca.Description, _ = d.str(ao, "description", "connector action", false)
		ca.Input = d.schema(ao, "input")
		ca.Output = d.schema(ao, "output")
		ca.SideEffect, _ = d.enum(ao, "sideEffect", "connector action", sideEffects, true)
		c.Actions = append(c.Actions, ca)
	}
	return c
}

func (d *decoder) decisionTable(root *yaml.Node) *DecisionTableDoc {
	o := d.object(root, "", "decision table", append(append([]string(nil), decisionMetaKeys...), decisionTableKeys...))
	return &DecisionTableDoc{Meta: d.meta(o, "decision table"), Node: Node{YAML: root}}
}
