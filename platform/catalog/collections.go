package catalog

import "github.com/agentbridge/bridge/platform/lang"

// collection is a path segment under P that lists published versions of
// one definition kind.
type collection struct {
	// Segment is the path segment ("decision-tables").
	Segment string
	// Kind is the definition kind of the language ("decisionTable").
	Kind string
	// Name is the singular used in operation ids and messages.
	Name string
	// Op is the CamelCase stem of operation ids ("DecisionTable").
	Op string
}

// collections are the published-version collections of a project.
var collections = []collection{
	{Segment: "workflows", Kind: lang.KindWorkflow, Name: "workflow", Op: "Workflow"},
	{Segment: "actions", Kind: lang.KindAction, Name: "action", Op: "Action"},
	{Segment: "connectors", Kind: lang.KindConnector, Name: "connector", Op: "Connector"},
	{Segment: "decision-tables", Kind: lang.KindDecisionTable, Name: "decision table", Op: "DecisionTable"},
}
