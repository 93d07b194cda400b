package lang

import "gopkg.in/yaml.v3"

// The AST keeps the yaml.Node of every element so that any later check can
// point at the exact source range. It is produced by Parse and is read-only
// for callers.

// Definition kinds.
const (
	KindWorkflow      = "workflow"
	KindAction        = "action"
	KindConnector     = "connector"
	KindDecisionTable = "decisionTable"
)

// StepKind names a step kind; the step's kind key has the same spelling.
type StepKind string

// Step kinds.
const (
	StepAction   StepKind = "action"
	StepDecision StepKind = "decision"
	StepWait     StepKind = "wait"
	StepSignal   StepKind = "signal"
	StepHuman    StepKind = "human"
	StepAgent    StepKind = "agent"
	StepWorkflow StepKind = "workflow"
	StepForEach  StepKind = "forEach"
	StepParallel StepKind = "parallel"
	StepSwitch   StepKind = "switch"
	StepSet      StepKind = "set"
	StepFail     StepKind = "fail"
	StepSucceed  StepKind = "succeed"
)

// stepKinds in the order they are listed in messages.
var stepKinds = []StepKind{StepAction, StepDecision, StepWait, StepSignal, StepHuman, StepAgent,
	StepWorkflow, StepForEach, StepParallel, StepSwitch, StepSet, StepFail, StepSucceed}

// Side-effect classes of actions, from safest to least safe to repeat.
const (
	SideEffectReadOnly       = "read_only"
	SideEffectIdempotent     = "idempotent"
	SideEffectIdempotencyKey = "idempotency_key"
	SideEffectUnsafe         = "unsafe"
)

var sideEffects = []string{SideEffectReadOnly, SideEffectIdempotent, SideEffectIdempotencyKey, SideEffectUnsafe}

// File is one parsed definition document.
type File struct {
	Kind string
	Root *yaml.Node

	Workflow      *Workflow
	Action        *Action
	Connector     *Connector
	DecisionTable *DecisionTableDoc
}

// Meta holds the keys every definition has.
type Meta struct {
	ID          string
	IDNode      *yaml.Node
	Version     int
	Title       string
	Description string
}

// Node is a positioned piece of source: the YAML node and its JSON Pointer.
type Node struct {
	YAML *yaml.Node
	Path string
}

// Value is a value-or-expression: literal YAML in which every string that
// starts with "=" is a CEL expression.
type Value struct{ Node }

// Schema is an embedded JSON Schema together with its JSON form.
type Schema struct {
	Node
	JSON any
	doc  *schemaDoc
}

// Duration is a literal duration normalised to milliseconds.
type Duration struct {
	Node
	Ms int64
}

// Target names the step control continues with ("end" ends the step list).
type Target struct {
	Node
	Name string
}

// Reference is a reference to a published definition, "id@version".
type Reference struct {
	Node
	Text    string
	ID      string
	Version int
}

// Workflow is a workflow definition.
type Workflow struct {
	Meta
	Input   *Schema
	Output  *Schema
	Vars    []*VarDecl
	Timeout *Duration
	Result  *Value
	Steps   []*Step
}

// VarDecl declares a workflow variable by its JSON Schema.
type VarDecl struct {
	Node
	Name   string
	Schema *Schema
}

// Step is one node of the workflow graph. Only the fields of its Kind are set.
type Step struct {
	Node
	ID          string
	IDNode      *yaml.Node
	Kind        StepKind
	KindNode    *yaml.Node // the value of the kind key
	Title       string
	Description string
	Next        *Target

	// action, decision, workflow
	Ref         *Reference
	InlineTable *yaml.Node // decision with an inline table
	With        *Value
	Timeout     *Duration
	Deadline    *Duration
	Retry       *Retry
	SideEffect  *Node // action: the author's statement of the class
	IdemKey     *Value
	OnTimeout   *Target // signal, human

	// wait
	Wait *Value

	// signal
	Signal        string
	SignalSchema  *Schema
	Human         *HumanTask
	Agent         *AgentTask
	Items         *Value // forEach
	As            string
	IndexName     string
	Concurrency   int
	Body          []*Step
	Collect       *Value
	Branches      []*Branch
	Cases         []*Case
	Default       *Target
	Assignments   []*Assignment
	FailCode      string
	FailMessage   *Value
	SucceedResult *Value

	// scope bookkeeping, filled by the parser
	parent *Step   // enclosing forEach or parallel, nil at top level
	branch *Branch // enclosing parallel branch
	list   []*Step // the step list the step belongs to
	index  int     // position in list
}

// Retry is an automatic retry policy with exponential backoff.
type Retry struct {
	Node
	MaxAttempts        int
	InitialIntervalMs  int64
	BackoffCoefficient float64
	MaxIntervalMs      int64
	NonRetryable       []string
}

// HumanTask is the body of a human step.
type HumanTask struct {
	Node
	Title       *Value
	Description *Value
	Assignees   *Value
	Form        *Schema
	Decisions   []string
}

// AgentTask is the body of an agent step.
type AgentTask struct {
	Node
	Provider     string
	Model        string
	Instructions string
	Prompt       *Value
	Tools        []*Reference
	Output       *Schema
	MaxTurns     int
}

// Branch is one branch of a parallel step.
type Branch struct {
	Node
	Name     string
	NameNode *yaml.Node
	Steps    []*Step
}

// Case is one case of a switch step.
type Case struct {
	Node
	When *Value
	Next *Target
}

// Assignment is one variable assignment of a set step.
type Assignment struct {
	Node
	KeyNode *yaml.Node
	Name    string
	Value   *Value
}

// Action is an action definition.
type Action struct {
	Meta
	Input      *Schema
	Output     *Schema
	SideEffect string
	Timeout    *Duration
	Deadline   *Duration
	Retry      *Retry
	Connector  *Node // built-in adapter name or connector reference
	ConnRef    *Reference
	Operation  string
	OpNode     *yaml.Node
	Config     *Value
	Worker     string
	WorkerNode *yaml.Node
}

// Connector is a connector manifest.
type Connector struct {
	Meta
	Adapter      string
	AdapterNode  *yaml.Node
	Capabilities []string
	Connection   *Schema
	Actions      []*ConnectorAction
}

// ConnectorAction is one operation a connector offers.
type ConnectorAction struct {
	Node
	Name        string
	NameNode    *yaml.Node
	Title       string
	Description string
	Input       *Schema
	Output      *Schema
	SideEffect  string
}

// DecisionTableDoc is a decision table document; its body is checked by
// package platform/decision.
type DecisionTableDoc struct {
	Meta
	Node
}
