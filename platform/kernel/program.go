package kernel

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"cel.dev/cel-go/cel"
	"github.com/agentbridge/bridge/platform/decision"
	"github.com/agentbridge/bridge/platform/lang"
)

// ErrInvalidArtifact wraps every reason Load refuses an artifact.
var ErrInvalidArtifact = errors.New("kernel: invalid artifact")

// Program is a loaded workflow artifact: nodes indexed, expressions parsed
// and schemas and decision tables compiled once. It is immutable and safe
// for concurrent use by any number of Step calls.
type Program struct {
	id        string
	version   int
	digest    string
	timeoutMs int64
	entry     *string
	nodes     map[string]*node
	order     []*node
	input     *schema
	output    *schema
	vars      []*varDecl
	varByName map[string]*varDecl
	result    *template
	signals   map[string][]*node
	secrets   artSecrets
	schemas   *schemaSet
}

type varDecl struct {
	name   string
	schema *schema
	def    any // initial value, typed by the schema
}

// retryPolicy is an action's normalised policy.
type retryPolicy struct {
	maxAttempts   int
	initialMs     int64
	coefficient   float64
	maxIntervalMs int64
	nonRetryable  []string
}

// node is one entry of the artifact's flat node table.
type node struct {
	id, kind, title string
	parent, branch  string
	next            *string // nil: the end of its list

	// action, decision, workflow, agent
	ref         string
	refInfo     artRef
	with        *template
	sideEffect  string
	retrySafe   bool
	timeoutMs   int64
	deadlineMs  int64 // 0: none
	retry       retryPolicy
	idemKey     *template
	executor    string
	binding     json.RawMessage
	output      *schema // pinned output schema; nil accepts anything
	table       *decision.Compiled
	agent       *AgentSpec
	tools       map[string]*toolDef // agent: by action reference
	prompt      *template
	agentOutput json.RawMessage

	// wait
	duration *template

	// signal, human
	signal       string
	payload      *schema
	hasOnTimeout bool
	onTimeout    *string
	htitle       *template
	description  *template
	assignees    *template
	form         *schema
	formRaw      json.RawMessage
	decisions    []string

	// forEach
	items       *template
	as, index   string
	concurrency int
	body        *string
	collect     *template

	// parallel
	branches []branchDef

	// switch
	cases []caseDef
	def   *string

	// set
	assign []assignDef

	// fail
	code    string
	message *template

	// succeed
	result *template
}

type branchDef struct {
	name  string
	entry *string
}

type caseDef struct {
	when *template
	next *string
}

type assignDef struct {
	name  string
	value *template
}

// Option configures Load.
type Option func(*loadConfig)

type loadConfig struct {
	catalog     *lang.CatalogLock
	definitions [][]byte
}

// WithCatalog gives Load the catalog lock the artifact was compiled
// against. It is required when the workflow references definitions: its
// entries pin the output schemas that task results and reconciled results
// are validated against and that type their numbers, and its shared
// schemas resolve "catalog:schemas/..." references.
func WithCatalog(lock *lang.CatalogLock) Option {
	return func(c *loadConfig) { c.catalog = lock }
}

// WithDefinitions gives Load the compiled artifacts of referenced
// definitions. A definition is matched to a reference by the digest the
// reference pins (sha256 of the artifact bytes), so a different artifact
// can never stand in for the pinned one. Decision tables referenced by a
// decision step are required; action artifacts are optional and, when
// given, tell start_task effects how the action is bound (connector
// adapter, connector manifest or worker queue).
func WithDefinitions(artifacts ...[]byte) Option {
	return func(c *loadConfig) { c.definitions = append(c.definitions, artifacts...) }
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArtifact, fmt.Sprintf(format, args...))
}

// Load decodes a workflow artifact (the "artifact" of a lang compile
// result), checks that it is complete and executable, and compiles its
// expressions, schemas and decision tables.
func Load(artifact []byte, opts ...Option) (*Program, error) {
	var cfg loadConfig
	for _, o := range opts {
		o(&cfg)
	}
	var a artWorkflow
	dec := json.NewDecoder(bytes.NewReader(artifact))
	if err := dec.Decode(&a); err != nil {
		return nil, invalid("decode: %v", err)
	}
	switch {
	case a.Format != lang.WorkflowFormat:
		return nil, invalid("format %q is not %s", a.Format, lang.WorkflowFormat)
	case a.Kind != lang.KindWorkflow:
		return nil, invalid("kind %q is not a workflow", a.Kind)
	case a.Partial:
		return nil, invalid("the artifact is partial and must not be executed")
	case a.Expressions.Language != "cel":
		return nil, invalid("expression language %q is not cel", a.Expressions.Language)
	case a.Expressions.CostLimit != lang.ExprCostLimit:
		return nil, invalid("expression cost limit %d differs from the kernel's %d", a.Expressions.CostLimit, lang.ExprCostLimit)
	}
	sum := sha256.Sum256(artifact)
	p := &Program{
		id:        a.ID,
		version:   a.Version,
		digest:    "sha256:" + hex.EncodeToString(sum[:]),
		entry:     a.Entry,
		nodes:     map[string]*node{},
		varByName: map[string]*varDecl{},
		signals:   map[string][]*node{},
		secrets:   a.Secrets,
		schemas:   newSchemaSet(),
	}
	if a.TimeoutMs != nil {
		if *a.TimeoutMs <= 0 || *a.TimeoutMs > lang.MaxDurationMs {
			return nil, invalid("timeoutMs %d out of range", *a.TimeoutMs)
		}
		p.timeoutMs = *a.TimeoutMs
	}
	l := &loader{p: p, cfg: &cfg, a: &a}
	if err := l.load(); err != nil {
		return nil, err
	}
	return p, nil
}

// loader carries what Load needs while it builds a Program.
type loader struct {
	p       *Program
	cfg     *loadConfig
	a       *artWorkflow
	exprs   *exprCompiler
	catalog map[string]*lang.CatalogEntry
	defs    map[string]*artDefinition // by digest
}

func (l *loader) load() error {
	if err := l.indexCatalog(); err != nil {
		return err
	}
	if err := l.indexDefinitions(); err != nil {
		return err
	}
	if err := l.newEnv(); err != nil {
		return err
	}
	p := l.p
	var err error
	if p.input, err = p.schemas.add(l.a.Input, "input schema"); err != nil {
		return invalid("%v", err)
	}
	if p.output, err = p.schemas.add(l.a.Output, "output schema"); err != nil {
		return invalid("%v", err)
	}
	for _, v := range l.a.Vars {
		s, err := p.schemas.add(v.Schema, "schema of variable "+v.Name)
		if err != nil {
			return invalid("%v", err)
		}
		var def any
		if len(v.Default) > 0 && string(v.Default) != "null" {
			raw, err := decodeExternal(v.Default)
			if err != nil {
				return invalid("default of variable %s: %v", v.Name, err)
			}
			def = s.normalize(raw)
		}
		if _, dup := p.varByName[v.Name]; dup || v.Name == "" {
			return invalid("variable %q declared twice or unnamed", v.Name)
		}
		d := &varDecl{name: v.Name, schema: s, def: def}
		p.vars = append(p.vars, d)
		p.varByName[v.Name] = d
	}
	if p.result, err = l.exprs.decodeTemplate(l.a.Result); err != nil {
		return invalid("result: %v", err)
	}
	for i := range l.a.Nodes {
		n, err := l.node(&l.a.Nodes[i])
		if err != nil {
			return invalid("node %s: %v", l.a.Nodes[i].ID, err)
		}
		if _, dup := p.nodes[n.id]; dup || n.id == "" {
			return invalid("node id %q is empty or used twice", n.id)
		}
		p.nodes[n.id] = n
		p.order = append(p.order, n)
	}
	return l.checkGraph()
}

func (l *loader) indexCatalog() error {
	l.catalog = map[string]*lang.CatalogEntry{}
	lock := l.cfg.catalog
	if lock == nil {
		return nil
	}
	schemas := slices.Clone(lock.Schemas)
	sort.SliceStable(schemas, func(i, j int) bool { return schemas[i].ID < schemas[j].ID })
	for _, s := range schemas {
		if err := l.p.schemas.addCatalog(s.ID, s.Schema); err != nil {
			return invalid("catalog lock: %v", err)
		}
	}
	for i := range lock.Definitions {
		e := &lock.Definitions[i]
		l.catalog[fmt.Sprintf("%s:%s@%d", e.Kind, e.ID, e.Version)] = e
	}
	return nil
}

func (l *loader) indexDefinitions() error {
	l.defs = map[string]*artDefinition{}
	for _, raw := range l.cfg.definitions {
		var d artDefinition
		if err := json.Unmarshal(raw, &d); err != nil {
			return invalid("definition artifact: %v", err)
		}
		if d.Partial {
			return invalid("definition %s@%d is partial", d.ID, d.Version)
		}
		sum := sha256.Sum256(raw)
		l.defs["sha256:"+hex.EncodeToString(sum[:])] = &d
	}
	return nil
}

// newEnv declares every variable an expression can see as dyn: the five
// workflow variables and every loop variable of the workflow.
func (l *loader) newEnv() error {
	declared := map[string]bool{}
	opts := lang.ExprEnvOptions()
	for _, name := range []string{"input", "steps", "vars", "now", "run"} {
		declared[name] = true
		opts = append(opts, cel.Variable(name, cel.DynType))
	}
	for _, n := range l.a.Nodes {
		if n.Kind != string(lang.StepForEach) {
			continue
		}
		for _, name := range []string{n.As, n.Index} {
			if name != "" && !declared[name] {
				declared[name] = true
				opts = append(opts, cel.Variable(name, cel.DynType))
			}
		}
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return invalid("expression environment: %v", err)
	}
	l.exprs = &exprCompiler{env: env, cache: map[string]*expr{}}
	return nil
}

func exprProgramOptions() []cel.ProgramOption { return lang.ExprProgramOptions() }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (l *loader) node(an *artNode) (*node, error) {
	n := &node{id: an.ID, kind: an.Kind, title: deref(an.Title), parent: deref(an.Parent), branch: deref(an.Branch), next: an.Next}
	t := l.exprs.decodeTemplate
	var err error
	switch lang.StepKind(an.Kind) {
	case lang.StepAction:
		err = l.actionNode(n, an)
	case lang.StepDecision:
		if n.with, err = t(an.With); err != nil {
			return nil, err
		}
		err = l.decisionNode(n, an)
	case lang.StepWorkflow:
		if n.with, err = t(an.With); err != nil {
			return nil, err
		}
		if an.TimeoutMs != nil {
			n.timeoutMs = *an.TimeoutMs
		}
		var e *lang.CatalogEntry
		if n.refInfo, e, err = l.reference(lang.KindWorkflow, an.Ref); err != nil {
			return nil, err
		}
		n.ref = deref(an.Ref)
		n.output, err = l.p.schemas.add(e.OutputSchema, "output schema of "+n.ref)
	case lang.StepWait:
		if n.duration, err = t(an.Duration); err == nil && n.duration == nil {
			err = errors.New("a wait needs a duration")
		}
	case lang.StepSignal:
		n.signal = an.Signal
		if n.signal == "" {
			return nil, errors.New("a signal step needs a name")
		}
		n.deadlineMs = derefInt(an.DeadlineMs)
		n.hasOnTimeout = an.OnTimeout != nil
		if an.OnTimeout != nil {
			n.onTimeout = an.OnTimeout.Next
		}
		n.payload, err = l.p.schemas.add(an.Schema, "schema of signal "+n.signal)
		l.p.signals[n.signal] = append(l.p.signals[n.signal], n)
	case lang.StepHuman:
		err = l.humanNode(n, an)
	case lang.StepAgent:
		err = l.agentNode(n, an)
	case lang.StepForEach:
		n.as, n.index, n.concurrency, n.body = an.As, an.Index, an.Concurrency, an.Body
		if n.concurrency < 1 {
			n.concurrency = 1
		}
		if n.items, err = t(an.Items); err != nil {
			return nil, err
		}
		if n.items == nil {
			return nil, errors.New("a forEach needs items")
		}
		n.collect, err = t(an.Collect)
	case lang.StepParallel:
		for _, b := range an.Branches {
			n.branches = append(n.branches, branchDef{name: b.Name, entry: b.Entry})
		}
	case lang.StepSwitch:
		for _, c := range an.Cases {
			w, err := t(c.When)
			if err != nil {
				return nil, err
			}
			n.cases = append(n.cases, caseDef{when: w, next: c.Next})
		}
		n.def = an.Default
	case lang.StepSet:
		for _, a := range an.Assign {
			if _, ok := l.p.varByName[a.Var]; !ok {
				return nil, fmt.Errorf("set assigns undeclared variable %q", a.Var)
			}
			v, err := t(a.Value)
			if err != nil {
				return nil, err
			}
			n.assign = append(n.assign, assignDef{name: a.Var, value: v})
		}
	case lang.StepFail:
		n.code = an.Code
		n.message, err = t(an.Message)
	case lang.StepSucceed:
		n.result, err = t(an.Result)
	default:
		return nil, fmt.Errorf("unknown step kind %q", an.Kind)
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

func derefInt(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// reference resolves a node's reference through the artifact's reference
// table and the catalog lock, which must agree on the pinned version.
func (l *loader) reference(kind string, ref *string) (artRef, *lang.CatalogEntry, error) {
	if ref == nil || *ref == "" {
		return artRef{}, nil, errors.New("missing reference")
	}
	r, ok := l.a.References[kind+":"+*ref]
	if !ok || !r.Resolved {
		return artRef{}, nil, fmt.Errorf("reference %s is not resolved", *ref)
	}
	if l.cfg.catalog == nil {
		return artRef{}, nil, fmt.Errorf("reference %s needs the catalog lock the artifact was compiled with (WithCatalog)", *ref)
	}
	e, ok := l.catalog[fmt.Sprintf("%s:%s@%d", kind, r.ID, r.Version)]
	if !ok {
		return artRef{}, nil, fmt.Errorf("the catalog lock has no %s %s@%d", kind, r.ID, r.Version)
	}
	if e.Digest != r.Digest || e.PublishedVersionID != r.PublishedVersionID {
		return artRef{}, nil, fmt.Errorf("the catalog lock pins %s@%d differently from the artifact", r.ID, r.Version)
	}
	return r, e, nil
}

func (l *loader) actionNode(n *node, an *artNode) error {
	var err error
	t := l.exprs.decodeTemplate
	if n.with, err = t(an.With); err != nil {
		return err
	}
	if n.idemKey, err = t(an.IdempotencyKey); err != nil {
		return err
	}
	var e *lang.CatalogEntry
	if n.refInfo, e, err = l.reference(lang.KindAction, an.Ref); err != nil {
		return err
	}
	n.ref = deref(an.Ref)
	switch an.SideEffect {
	case lang.SideEffectReadOnly, lang.SideEffectIdempotent, lang.SideEffectIdempotencyKey, lang.SideEffectUnsafe:
	default:
		return fmt.Errorf("unknown side effect %q", an.SideEffect)
	}
	n.sideEffect = an.SideEffect
	// Only the class decides; the artifact's flag must agree with it.
	n.retrySafe = an.SideEffect != lang.SideEffectUnsafe
	n.timeoutMs = derefInt(an.TimeoutMs)
	n.deadlineMs = derefInt(an.DeadlineMs)
	if n.timeoutMs <= 0 {
		return errors.New("timeoutMs must be positive")
	}
	if an.Retry == nil || an.Retry.MaxAttempts < 1 {
		return errors.New("retry policy missing or without attempts")
	}
	n.retry = retryPolicy{
		maxAttempts:   an.Retry.MaxAttempts,
		initialMs:     max(an.Retry.InitialIntervalMs, 1),
		coefficient:   max(an.Retry.BackoffCoefficient, 1),
		maxIntervalMs: max(an.Retry.MaxIntervalMs, an.Retry.InitialIntervalMs, 1),
		nonRetryable:  slices.Clone(an.Retry.NonRetryable),
	}
	if n.output, err = l.p.schemas.add(e.OutputSchema, "output schema of "+n.ref); err != nil {
		return err
	}
	n.executor = ExecutorAction
	if d, ok := l.defs[n.refInfo.Digest]; ok {
		if n.executor, n.binding, err = actionBinding(n.ref, n.refInfo, d); err != nil {
			return err
		}
	}
	return nil
}

// actionBinding answers how the pinned action definition d is executed.
func actionBinding(ref string, r artRef, d *artDefinition) (string, json.RawMessage, error) {
	if d.Kind != lang.KindAction || d.ID != r.ID || d.Version != r.Version {
		return "", nil, fmt.Errorf("definition with digest %s is not action %s@%d", r.Digest, r.ID, r.Version)
	}
	var b struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(d.Binding, &b); err != nil {
		return "", nil, fmt.Errorf("binding of %s: %w", ref, err)
	}
	executor := ""
	switch b.Type {
	case "adapter", "connector":
		executor = ExecutorConnector
	case "worker":
		executor = ExecutorWorker
	default:
		return "", nil, fmt.Errorf("binding of %s has unknown type %q", ref, b.Type)
	}
	binding, _, err := canonicalExternal(d.Binding)
	if err != nil {
		return "", nil, fmt.Errorf("binding of %s: %w", ref, err)
	}
	return executor, binding, nil
}

func (l *loader) decisionNode(n *node, an *artNode) error {
	tableJSON := an.Table
	if len(tableJSON) == 0 || string(tableJSON) == "null" {
		r, _, err := l.reference(lang.KindDecisionTable, an.Ref)
		if err != nil {
			return err
		}
		n.ref, n.refInfo = deref(an.Ref), r
		d, ok := l.defs[r.Digest]
		if !ok {
			return fmt.Errorf("decision table %s: give its artifact with WithDefinitions", n.ref)
		}
		if d.Kind != lang.KindDecisionTable || d.ID != r.ID || d.Version != r.Version {
			return fmt.Errorf("definition with digest %s is not decision table %s@%d", r.Digest, r.ID, r.Version)
		}
		// Expressions were typed with the lock's output schema; a table
		// whose real output has another shape would fail them at run time.
		if e := l.catalog[fmt.Sprintf("%s:%s@%d", lang.KindDecisionTable, r.ID, r.Version)]; len(e.OutputSchema) > 0 {
			a, errA := lang.CanonicalJSON(e.OutputSchema)
			b, errB := lang.CanonicalJSON(d.Output)
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				return fmt.Errorf("the catalog lock's output schema of %s (%s) is not the table's (%s)", n.ref, a, b)
			}
		}
		tableJSON = d.Table
	}
	table, err := decision.Parse(tableJSON)
	if err != nil {
		return err
	}
	n.table, err = decision.Compile(table)
	return err
}

func (l *loader) humanNode(n *node, an *artNode) error {
	if an.Human == nil {
		return errors.New("a human step needs its task")
	}
	var err error
	t := l.exprs.decodeTemplate
	if n.htitle, err = t(an.Human.Title); err != nil {
		return err
	}
	if n.description, err = t(an.Human.Description); err != nil {
		return err
	}
	if n.assignees, err = t(an.Human.Assignees); err != nil {
		return err
	}
	if n.form, err = l.p.schemas.add(an.Human.Form, "form of "+n.id); err != nil {
		return err
	}
	if len(an.Human.Form) > 0 && string(an.Human.Form) != "null" {
		if n.formRaw, _, err = canonicalExternal(an.Human.Form); err != nil {
			return err
		}
	}
	n.decisions = an.Human.Decisions
	if len(n.decisions) == 0 {
		n.decisions = []string{"complete"}
	}
	n.deadlineMs = derefInt(an.DeadlineMs)
	n.hasOnTimeout = an.OnTimeout != nil
	if an.OnTimeout != nil {
		n.onTimeout = an.OnTimeout.Next
	}
	return nil
}

func (l *loader) agentNode(n *node, an *artNode) error {
	if an.Agent == nil {
		return errors.New("an agent step needs its agent")
	}
	var err error
	if n.prompt, err = l.exprs.decodeTemplate(an.Agent.Prompt); err != nil {
		return err
	}
	n.timeoutMs = derefInt(an.TimeoutMs)
	if n.timeoutMs <= 0 {
		return errors.New("timeoutMs must be positive")
	}
	n.sideEffect = lang.SideEffectUnsafe // an agent may call tools: never repeated automatically
	n.retry = retryPolicy{maxAttempts: 1, initialMs: 1, coefficient: 1, maxIntervalMs: 1}
	n.executor = ExecutorAgent
	if len(an.Agent.Output) > 0 && string(an.Agent.Output) != "null" {
		if n.agentOutput, _, err = canonicalExternal(an.Agent.Output); err != nil {
			return err
		}
		if n.output, err = l.p.schemas.add(an.Agent.Output, "output of agent "+n.id); err != nil {
			return err
		}
	} else if n.output, err = l.p.schemas.add(json.RawMessage(`{"type":"string"}`), "output of agent "+n.id); err != nil {
		return err
	}
	n.agent = &AgentSpec{
		Provider:     an.Agent.Provider,
		Model:        deref(an.Agent.Model),
		Instructions: deref(an.Agent.Instructions),
		Tools:        slices.Clone(an.Agent.Tools),
		Output:       n.agentOutput,
		MaxTurns:     an.Agent.MaxTurns,
	}
	return l.agentTools(n, an.Agent.Tools)
}

// checkGraph verifies that every transition names a node of the same list
// and every container relation is consistent, so Step never meets a
// dangling reference.
func (l *loader) checkGraph() error {
	p := l.p
	exists := func(id *string, what string, from *node) error {
		if id == nil {
			return nil
		}
		t, ok := p.nodes[*id]
		if !ok {
			return invalid("%s of %s names unknown node %q", what, from.id, *id)
		}
		if t.parent != from.parent || t.branch != from.branch {
			return invalid("%s of %s leaves its step list", what, from.id)
		}
		return nil
	}
	if p.entry != nil {
		e, ok := p.nodes[*p.entry]
		if !ok || e.parent != "" {
			return invalid("entry %q is not a top-level node", *p.entry)
		}
	} else if len(p.order) > 0 {
		return invalid("a workflow with nodes needs an entry")
	}
	for _, n := range p.order {
		if n.parent != "" {
			c, ok := p.nodes[n.parent]
			if !ok || (c.kind != string(lang.StepForEach) && c.kind != string(lang.StepParallel)) {
				return invalid("parent %q of %s is not a forEach or parallel node", n.parent, n.id)
			}
		}
		for _, id := range []*string{n.next, n.onTimeout, n.def} {
			if err := exists(id, "a transition", n); err != nil {
				return err
			}
		}
		for _, c := range n.cases {
			if err := exists(c.next, "a case", n); err != nil {
				return err
			}
		}
		if n.body != nil {
			b, ok := p.nodes[*n.body]
			if !ok || b.parent != n.id {
				return invalid("body %q of %s is not inside it", *n.body, n.id)
			}
		}
		for _, br := range n.branches {
			if br.entry == nil {
				continue
			}
			b, ok := p.nodes[*br.entry]
			if !ok || b.parent != n.id || b.branch != br.name {
				return invalid("branch %s of %s does not start inside it", br.name, n.id)
			}
		}
	}
	return nil
}

// ID is the workflow's id.
func (p *Program) ID() string { return p.id }

// Version is the workflow's version.
func (p *Program) Version() int { return p.version }

// Digest is "sha256:<hex>" of the artifact bytes the program was loaded
// from; a State records it and Step refuses a state of another program.
func (p *Program) Digest() string { return p.digest }

// SecretPointers are the JSON Pointers of secret fields in the run input
// and output ("*" for any element): the state holds those values, and
// whoever shows or exports a state must redact them.
func (p *Program) SecretPointers() (input, output []string) {
	return slices.Clone(p.secrets.Input), slices.Clone(p.secrets.Output)
}

// Signals lists the signal names the workflow declares, sorted.
func (p *Program) Signals() []string {
	out := make([]string, 0, len(p.signals))
	for name := range p.signals {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func (p *Program) node(id string) *node { return p.nodes[id] }
