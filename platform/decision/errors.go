package decision

import (
	"errors"
	"fmt"
	"strings"
)

// Error is one validation problem found by Compile. RuleIndex, Column and
// Field locate it in the source so callers can map it to a position:
//
//   - RuleIndex is the 0-based index into Rules, or -1.
//   - Column is the 0-based input index (Field "inputs.*" or "rules.when"),
//     output index (Field "outputs.*", "rules.then", "default"), or -1.
//   - Field names the key: "table" (nil table), "kind", "hitPolicy", "aggregation", "inputs",
//     "inputs.name", "inputs.type", "outputs", "outputs.name", "outputs.type",
//     "outputs.allowedValues", "rules.id", "rules.when", "rules.then", "default".
//   - Offset is the byte offset inside a unary test's text ("rules.when"), or -1.
type Error struct {
	RuleIndex int    `json:"rule_index"`
	Column    int    `json:"column"`
	Field     string `json:"field"`
	Offset    int    `json:"offset"`
	Msg       string `json:"message"`
}

// Path renders the location like rules[3].when[1] or outputs[0].type.
func (e *Error) Path() string {
	section, key, _ := strings.Cut(e.Field, ".")
	var b strings.Builder
	b.WriteString(section)
	switch section {
	case "inputs", "outputs":
		if e.Column >= 0 {
			fmt.Fprintf(&b, "[%d]", e.Column)
		}
	case "rules":
		if e.RuleIndex >= 0 {
			fmt.Fprintf(&b, "[%d]", e.RuleIndex)
		}
	case "default":
		if e.Column >= 0 {
			fmt.Fprintf(&b, "[%d]", e.Column)
		}
	}
	if key != "" {
		b.WriteString(".")
		b.WriteString(key)
		if section == "rules" && (key == "when" || key == "then") && e.Column >= 0 {
			fmt.Fprintf(&b, "[%d]", e.Column)
		}
	}
	return b.String()
}

func (e *Error) Error() string { return e.Path() + ": " + e.Msg }

// Errors is every problem Compile found, in source order.
type Errors []*Error

func (es Errors) Error() string {
	switch len(es) {
	case 0:
		return "decision: no errors"
	case 1:
		return "decision: invalid table: " + es[0].Error()
	}
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return fmt.Sprintf("decision: invalid table: %d errors: %s", len(es), strings.Join(parts, "; "))
}

// Unwrap exposes the individual errors to errors.Is/As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Sentinels wrapped by *EvalError, for errors.Is.
var (
	// ErrHitPolicy: the matches violate the hit policy (UNIQUE with several
	// matches, ANY with different outputs). DMN's result would be null.
	ErrHitPolicy = errors.New("hit policy violation")
	// ErrInputType: an input value does not fit its column type.
	ErrInputType = errors.New("input type mismatch")
)

// EvalError is an evaluation failure.
type EvalError struct {
	Err     error    // ErrHitPolicy or ErrInputType
	Input   string   // the offending input (ErrInputType)
	RuleIDs []string // the matched rules (ErrHitPolicy)
	Msg     string
}

func (e *EvalError) Error() string { return "decision: " + e.Err.Error() + ": " + e.Msg }

func (e *EvalError) Unwrap() error { return e.Err }
