package steptest

import (
	"time"
)

// Test call policies: what step tests and draft test activations of an
// environment may call (docs/platform-api.md, "Test policy").
const (
	// CallsDisabled refuses every step test and test activation (403
	// PF-STEPTEST-DISABLED); it is the policy of an environment that has
	// none stored.
	CallsDisabled = "disabled"
	// CallsReadOnly allows steps and drafts without side effects or whose
	// actions are read_only.
	CallsReadOnly = "read_only"
	// CallsAll also allows side-effecting ones, each with its
	// acknowledgment.
	CallsAll = "all"
)

// Policy is an environment's test policy; Revision 0 is the default
// (disabled, never stored).
type Policy struct {
	TestCalls string     `json:"test_calls" enum:"disabled,read_only,all"`
	Revision  int64      `json:"revision" doc:"0 while the environment has no stored policy"`
	UpdatedAt *time.Time `json:"updated_at"`
	UpdatedBy *string    `json:"updated_by" format:"uuid"`
}

// PolicyRequest is the body of PUT E/test-policy.
type PolicyRequest struct {
	TestCalls string `json:"test_calls" api:"required" enum:"disabled,read_only,all" doc:"disabled, read_only (steps without side effects or read_only actions) or all (side-effecting steps too, each acknowledged)"`
}

// allows reports whether policy p lets a step or draft of side effect
// class effect run.
func (p Policy) allows(effect string) bool {
	switch p.TestCalls {
	case CallsAll:
		return true
	case CallsReadOnly:
		return !sideEffecting(effect)
	}
	return false
}

// permit answers 403 PF-STEPTEST-DISABLED when p does not let effect run.
func (p Policy) permit(effect string) error {
	if p.TestCalls == CallsDisabled {
		return refused(CodeDisabled, "the environment's test policy is disabled (revision %d); PUT E/test-policy to allow test calls", p.Revision)
	}
	if !p.allows(effect) {
		return refused(CodeDisabled, "the environment's test policy allows read_only calls only; this has side effect %s", effect)
	}
	return nil
}
