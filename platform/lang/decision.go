package lang

import (
	"errors"
	"fmt"
	"strings"

	"cel.dev/cel-go/common/types"
	"github.com/agentbridge/bridge/platform/decision"
	"gopkg.in/yaml.v3"
)

// Decision tables use the format of package platform/decision. The language
// adds the definition keys (kind, id, version, title, description) around
// it, checks the table with decision.Parse and decision.Compile, and maps
// their errors back to source positions.

func (c *compiler) compileDecisionTable(dt *DecisionTableDoc) map[string]any {
	tableJSON, table := c.checkDecisionTable(dt.YAML, "", true)
	art := map[string]any{
		"format":      DecisionTableFormat,
		"kind":        KindDecisionTable,
		"id":          dt.ID,
		"version":     dt.Version,
		"title":       nilIfEmpty(dt.Title),
		"description": nilIfEmpty(dt.Description),
		"table":       tableJSON,
		"input":       nil,
		"output":      nil,
	}
	if table != nil {
		art["input"] = decisionInputSchema(table)
		art["output"] = decisionOutputSchema(table)
	}
	return art
}

// inlineDecisionTable checks a table written inside a decision step and
// derives the step's input schema and output type.
func (c *compiler) inlineDecisionTable(n *yaml.Node, path string) (*schemaDoc, *types.Type, map[string]any) {
	tableJSON, table := c.checkDecisionTable(n, path, false)
	if table == nil {
		return nil, nil, tableJSON
	}
	in, _ := c.ss.fromJSON(mustCanonical(decisionInputSchema(table)), path+".input")
	out, _ := c.ss.fromJSON(mustCanonical(decisionOutputSchema(table)), path+".output")
	return in, c.ss.celType(out.root(), "decision"+strings.ReplaceAll(path, "/", ".")), tableJSON
}

func mustCanonical(v any) []byte {
	b, err := encodeCanonical(v)
	if err != nil {
		return []byte("true")
	}
	return b
}

// checkDecisionTable validates the table keys of a mapping. document says
// whether the mapping is a whole definition (with meta keys, already checked
// by the parser) or an inline table.
func (c *compiler) checkDecisionTable(n *yaml.Node, path string, document bool) (map[string]any, *decision.Table) {
	if n.Kind != yaml.MappingNode {
		c.diags.errorf(CodeType, c.src.rangeOf(n), path, "a decision table must be a mapping")
		return nil, nil
	}
	tableJSON := map[string]any{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !contains(decisionTableKeys, k.Value) {
			if !document {
				msg := "unknown key %q in an inline decision table"
				args := []any{k.Value}
				if s := suggest(k.Value, decisionTableKeys); s != "" {
					msg += "; did you mean %q?"
					args = append(args, s)
				}
				c.diags.errorf(CodeUnknownKey, c.src.rangeOf(k), joinPath(path, k.Value), msg, args...)
			}
			continue
		}
		val, err := toJSON(v)
		if err != nil {
			c.diags.errorf(CodeType, c.src.rangeOf(v), joinPath(path, k.Value), "%v", err)
			return nil, nil
		}
		tableJSON[k.Value] = val
	}
	for _, req := range []string{"inputs", "outputs", "rules"} {
		if _, ok := tableJSON[req]; !ok {
			c.diags.errorf(CodeMissingKey, c.src.rangeOf(firstKey(n)), path, "decision table is missing required key %q", req)
			return tableJSON, nil
		}
	}
	raw, err := encodeCanonical(tableJSON)
	if err != nil {
		c.diags.errorf(CodeDecisionTable, c.src.rangeOf(n), path, "%v", err)
		return tableJSON, nil
	}
	table, err := decision.Parse(raw)
	if err != nil {
		c.diags.errorf(CodeDecisionTable, c.src.rangeOf(n), path, "%s", strings.TrimPrefix(err.Error(), "decision: "))
		return tableJSON, nil
	}
	if _, err := decision.Compile(table); err != nil {
		var errs decision.Errors
		if !errors.As(err, &errs) {
			c.diags.errorf(CodeDecisionTable, c.src.rangeOf(n), path, "%s", strings.TrimPrefix(err.Error(), "decision: "))
			return tableJSON, nil
		}
		for _, e := range errs {
			at, atPath := decisionErrorNode(n, path, e)
			r := c.src.rangeOf(at)
			if e.Offset > 0 && at.Kind == yaml.ScalarNode && !strings.Contains(at.Value, "\n") {
				shift := 0
				if at.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
					shift = 1
				}
				col := at.Column + shift + len([]rune(safePrefix(at.Value, e.Offset)))
				if col < r.End.Column {
					r.Start.Column = col
				}
			}
			c.diags.errorf(CodeDecisionTable, r, atPath, "%s: %s", e.Path(), e.Msg)
		}
		return tableJSON, nil
	}
	return tableJSON, table
}

func safePrefix(s string, n int) string {
	if n > len(s) {
		n = len(s)
	}
	return s[:n]
}

// decisionErrorNode locates a decision.Error in the table's YAML.
func decisionErrorNode(table *yaml.Node, path string, e *decision.Error) (*yaml.Node, string) {
	section, key, _ := strings.Cut(e.Field, ".")
	n := mappingValue(table, section)
	p := joinPath(path, section)
	if n == nil {
		return table, path
	}
	index := func(i int) {
		if n.Kind == yaml.SequenceNode && i >= 0 && i < len(n.Content) {
			n = n.Content[i]
			p = joinPath(p, fmt.Sprint(i))
		}
	}
	member := func(k string) {
		if n.Kind == yaml.MappingNode {
			if v := mappingValue(n, k); v != nil {
				n = v
				p = joinPath(p, k)
			}
		}
	}
	switch section {
	case "inputs", "outputs":
		index(e.Column)
		if key != "" {
			member(key)
		}
	case "rules":
		index(e.RuleIndex)
		if key != "" {
			member(key)
			if key == "when" || key == "then" {
				index(e.Column)
				if key == "then" && n.Kind == yaml.MappingNode && e.Column >= 0 && e.Column < len(n.Content)/2 {
					p = joinPath(p, n.Content[2*e.Column].Value)
					n = n.Content[2*e.Column+1]
				}
			}
		}
	case "default":
		index(e.Column)
	}
	return n, p
}

// columnSchema maps a decision column type to JSON Schema.
func columnSchema(typ string, allowed []any) map[string]any {
	s := map[string]any{}
	switch typ {
	case "number":
		s["type"] = "number"
	case "string", "date", "dateTime", "duration":
		s["type"] = "string"
	case "boolean":
		s["type"] = "boolean"
	}
	if len(allowed) > 0 {
		vals := make([]any, len(allowed))
		copy(vals, allowed)
		s["enum"] = normalizeJSONValues(vals)
	}
	return s
}

// normalizeJSONValues converts YAML-decoded scalars into JSON value types.
func normalizeJSONValues(vals []any) []any {
	out := make([]any, 0, len(vals))
	for _, v := range vals {
		switch x := v.(type) {
		case int:
			out = append(out, int64(x))
		case uint64:
			out = append(out, float64(x))
		case string, bool, nil, int64, float64:
			out = append(out, x)
		default:
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}

// decisionInputSchema describes the input object: dotted input names walk
// nested objects.
func decisionInputSchema(t *decision.Table) map[string]any {
	root := map[string]any{"type": "object", "properties": map[string]any{}}
	for _, in := range t.Inputs {
		cur := root
		segs := strings.Split(in.Name, ".")
		for i, seg := range segs {
			props := cur["properties"].(map[string]any)
			if i == len(segs)-1 {
				props[seg] = columnSchema(in.Type, nil)
				break
			}
			next, ok := props[seg].(map[string]any)
			if !ok || next["properties"] == nil {
				next = map[string]any{"type": "object", "properties": map[string]any{}}
				props[seg] = next
			}
			cur = next
		}
	}
	return root
}

// decisionOutputSchema follows decision.Result's output shapes: one output
// is the value itself, several an object; list hit policies give a list,
// COLLECT with an aggregation a number.
func decisionOutputSchema(t *decision.Table) map[string]any {
	var shape map[string]any
	if len(t.Outputs) == 1 {
		shape = columnSchema(t.Outputs[0].Type, t.Outputs[0].AllowedValues)
	} else {
		props := map[string]any{}
		for _, o := range t.Outputs {
			props[o.Name] = columnSchema(o.Type, o.AllowedValues)
		}
		shape = map[string]any{"type": "object", "properties": props}
	}
	switch t.HitPolicy {
	case "COLLECT":
		switch t.Aggregation {
		case "":
			return map[string]any{"type": "array", "items": shape}
		case "SUM", "COUNT":
			return map[string]any{"type": "number"}
		default:
			return shape
		}
	case "RULE ORDER", "OUTPUT ORDER":
		return map[string]any{"type": "array", "items": shape}
	}
	return shape
}
