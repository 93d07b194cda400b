// Package decision implements DMN-style decision tables: a YAML/JSON table
// format, a compiler that validates the table and pre-parses every unary test
// (a FEEL subset), and a fast evaluator with the DMN hit policies.
//
// Format (camelCase keys; the same shape is embedded in workflows as
// `kind: decisionTable`):
//
//	kind: decisionTable      # optional
//	id: shipping-fee         # optional
//	hitPolicy: UNIQUE        # UNIQUE | ANY | PRIORITY | FIRST | COLLECT | RULE ORDER | OUTPUT ORDER
//	aggregation: SUM         # COLLECT only: SUM | COUNT | MIN | MAX
//	inputs:
//	  - {name: order.weight, type: number}  # number|string|boolean|date|dateTime|duration
//	outputs:
//	  - {name: fee, type: number, allowedValues: [5, 10]}  # type optional; allowedValues optional
//	rules:
//	  - id: r1               # default rule-<n>, 1-based
//	    when: ["< 10"]       # one unary test per input
//	    then: [5]            # one literal per output, or {fee: 5}, or a bare scalar for one output
//	    annotation: text
//	default: {fee: 0}        # used when no rule matches
//
// Unary tests (one per input cell) are a FEEL subset: - (any value);
// literals (numbers, "strings", true, false, null, date("2024-01-02"),
// date and time("2024-01-02T10:00:00Z"), duration("P1D"), @"..."); the
// comparisons < <= > >= = != against a literal; intervals [a..b], (a..b),
// ]a..b[ and mixed ends; comma lists (any member true); and not(list).
//
// Null semantics follow FEEL: a missing input is null; null = x is false
// (null = null is true) and null != x is therefore true; ordering and
// intervals with null are null, and a null test result never matches; a
// list is true if any member is true, else null if any member is null;
// not() maps true/false to false/true and keeps null. So a null input
// matches -, null, != x, and not(...) lists of equality tests.
//
// Numbers are compared exactly: literals are parsed as exact decimals, a
// float64 input means the shortest decimal that round-trips it (so 0.1 equals
// the literal 0.1), and the float64 fast path falls back to math/big only on
// ties between values that are not exactly representable. Strings compare
// by code point, dates by day, date-times by instant (a local date-time,
// without offset, only compares with local ones), durations within their
// FEEL kind (years-and-months or days-and-time). Number outputs are returned
// as float64; SUM is computed exactly before that conversion.
package decision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// Kind is the value of the optional `kind` key.
const Kind = "decisionTable"

// Table is the source form of a decision table, decodable from YAML
// (gopkg.in/yaml.v3) and JSON (encoding/json).
type Table struct {
	Kind        string   `json:"kind,omitempty" yaml:"kind,omitempty"`
	ID          string   `json:"id,omitempty" yaml:"id,omitempty"`
	HitPolicy   string   `json:"hitPolicy,omitempty" yaml:"hitPolicy,omitempty"`
	Aggregation string   `json:"aggregation,omitempty" yaml:"aggregation,omitempty"`
	Inputs      []Input  `json:"inputs" yaml:"inputs"`
	Outputs     []Output `json:"outputs" yaml:"outputs"`
	Rules       []Rule   `json:"rules" yaml:"rules"`
	// Default is the output used when no rule matches: an object keyed by
	// output name (missing outputs are null), a list with one entry per output,
	// or a bare scalar for a single-output table. Nil means no default.
	Default any `json:"default,omitempty" yaml:"default,omitempty"`
}

// Input is an input column. Name is the key in the input object; a dotted
// name such as order.weight walks nested objects unless the input object has
// that exact key.
type Input struct {
	Name string `json:"name" yaml:"name"`
	Type string `json:"type" yaml:"type"`
}

// Output is an output column. Type is optional (any scalar when empty).
// AllowedValues, when present, restricts the column's values and defines
// their priority for PRIORITY and OUTPUT ORDER (first = highest).
type Output struct {
	Name          string `json:"name" yaml:"name"`
	Type          string `json:"type,omitempty" yaml:"type,omitempty"`
	AllowedValues []any  `json:"allowedValues,omitempty" yaml:"allowedValues,omitempty"`
}

// Rule is one row. When holds one unary test per input; Then holds the output
// entries: a list (one literal per output), an object keyed by output name
// (every output required), or a bare scalar for a single-output table.
type Rule struct {
	ID         string     `json:"id,omitempty" yaml:"id,omitempty"`
	When       UnaryTests `json:"when" yaml:"when"`
	Then       any        `json:"then" yaml:"then"`
	Annotation string     `json:"annotation,omitempty" yaml:"annotation,omitempty"`
}

// Parse decodes a table from YAML or JSON (JSON is read as YAML 1.2 flow
// syntax). Decoding is strict: unknown keys, duplicate keys and trailing
// documents are errors. Parse does not validate the table; call Compile.
func Parse(data []byte) (*Table, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("decision: parse table: empty document")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("decision: parse table: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, fmt.Errorf("decision: parse table: %w", err)
		}
		return nil, errors.New("decision: parse table: more than one document")
	}
	return &t, nil
}

// UnaryTest is the source text of one input entry, e.g. `< 10` or `"DE","AT"`.
// Any YAML/JSON scalar is accepted and kept as text, so `when: [5, true]`
// works; a YAML/JSON null reads as the test `null`.
type UnaryTest string

// UnmarshalYAML accepts any scalar node.
func (u *UnaryTest) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a unary test must be a scalar (quote it as a string)", n.Line)
	}
	if n.Tag == "!!null" && n.Value != "" { // ~, null, Null, NULL
		*u = "null"
		return nil
	}
	*u = UnaryTest(n.Value)
	return nil
}

// UnaryTests is a rule's `when` list. It decodes its YAML items itself
// because yaml.v3 silently drops null items from a []string-like slice,
// which would shift the columns.
type UnaryTests []UnaryTest

// UnmarshalYAML decodes a sequence of scalars.
func (ts *UnaryTests) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: when must be a list with one unary test per input", n.Line)
	}
	out := make(UnaryTests, len(n.Content))
	for i, item := range n.Content {
		if err := out[i].UnmarshalYAML(item); err != nil {
			return err
		}
	}
	*ts = out
	return nil
}

// UnmarshalJSON accepts strings, numbers, booleans and null.
func (u *UnaryTest) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return errors.New("empty unary test")
	}
	switch b[0] {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("unary test: %w", err)
		}
		*u = UnaryTest(s)
		return nil
	case '{', '[':
		return errors.New("a unary test must be a string, number, boolean or null")
	}
	*u = UnaryTest(b) // null, true, false or a number: its text is the FEEL literal
	return nil
}
