package lang

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Limits that keep every compilation bounded in time and memory.
const (
	// MaxSourceBytes is the largest source the compiler accepts.
	MaxSourceBytes = 1 << 20
	// MaxNestingDepth bounds YAML nesting (mappings and sequences).
	MaxNestingDepth = 64
	// MaxSteps bounds the number of steps in one workflow, nested ones included.
	MaxSteps = 10000
	// MaxExpressionLength bounds one expression, in code points.
	MaxExpressionLength = 4096
)

// source is the text being compiled, split into lines for position arithmetic.
type source struct {
	lines []string // without line terminators
}

func newSource(src []byte) *source {
	text := strings.ReplaceAll(string(src), "\r\n", "\n")
	return &source{lines: strings.Split(text, "\n")}
}

// line returns line n (1-based) as runes, or nil when out of range.
func (s *source) line(n int) []rune {
	if n < 1 || n > len(s.lines) {
		return nil
	}
	return []rune(s.lines[n-1])
}

func (s *source) lineEnd(n int) Position {
	if n < 1 || n > len(s.lines) {
		return Position{Line: n, Column: 1}
	}
	return Position{Line: n, Column: utf8.RuneCountInString(s.lines[n-1]) + 1}
}

// rangeOf gives the source range of a node. yaml.v3 records only where a node
// starts, so the end is recovered from the text.
func (s *source) rangeOf(n *yaml.Node) Range {
	if n == nil {
		return Range{}
	}
	start := Position{Line: n.Line, Column: n.Column}
	return Range{Start: start, End: s.endOf(n, 0)}
}

func (s *source) endOf(n *yaml.Node, depth int) Position {
	start := Position{Line: n.Line, Column: n.Column}
	if depth > MaxNestingDepth+2 {
		return start
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			return s.endOf(n.Content[len(n.Content)-1], depth+1)
		}
		return start
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Style&yaml.FlowStyle != 0 {
			return s.scanFlowEnd(start)
		}
		if len(n.Content) == 0 {
			return start
		}
		return s.endOf(n.Content[len(n.Content)-1], depth+1)
	case yaml.ScalarNode:
		return s.scalarEnd(n)
	default:
		return Position{Line: start.Line, Column: start.Column + 1}
	}
}

func (s *source) scalarEnd(n *yaml.Node) Position {
	start := Position{Line: n.Line, Column: n.Column}
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		return s.scanQuoted(start, '"')
	case n.Style&yaml.SingleQuotedStyle != 0:
		return s.scanQuoted(start, '\'')
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return s.blockEnd(start)
	}
	line := s.line(start.Line)
	if line == nil {
		return start
	}
	// A plain scalar: its text is on the source line as written. An implicit
	// null ("key:") has no text at all.
	if n.Value == "" {
		return start
	}
	if !strings.Contains(n.Value, "\n") {
		return Position{Line: start.Line, Column: start.Column + utf8.RuneCountInString(n.Value)}
	}
	return s.lineEnd(start.Line)
}

// scanQuoted walks from the opening quote to the closing one.
func (s *source) scanQuoted(start Position, quote rune) Position {
	line, col := start.Line, start.Column // col points at the opening quote
	first := true
	for line <= len(s.lines) {
		runes := s.line(line)
		i := col - 1
		if first {
			i++ // skip the opening quote
			first = false
		}
		for ; i < len(runes); i++ {
			r := runes[i]
			if quote == '"' && r == '\\' {
				i++
				continue
			}
			if r == quote {
				if quote == '\'' && i+1 < len(runes) && runes[i+1] == '\'' {
					i++
					continue
				}
				return Position{Line: line, Column: i + 2}
			}
		}
		line++
		col = 1
	}
	return s.lineEnd(len(s.lines))
}

// blockEnd finds the end of a literal or folded block scalar whose indicator
// is at start: the last non-blank line indented deeper than the first
// content line's indentation minus one.
func (s *source) blockEnd(start Position) Position {
	indent := -1
	last := start.Line
	for l := start.Line + 1; l <= len(s.lines); l++ {
		text := s.lines[l-1]
		trimmed := strings.TrimLeft(text, " ")
		if strings.TrimSpace(text) == "" {
			continue
		}
		ind := len(text) - len(trimmed)
		if indent < 0 {
			indent = ind
		}
		if ind < indent {
			break
		}
		last = l
	}
	if last == start.Line {
		return s.lineEnd(start.Line)
	}
	return s.lineEnd(last)
}

// scanFlowEnd matches brackets from a flow collection's opening bracket,
// skipping quoted strings and comments.
func (s *source) scanFlowEnd(start Position) Position {
	depth := 0
	line, col := start.Line, start.Column
	var quote rune
	for line <= len(s.lines) {
		runes := s.line(line)
		for i := col - 1; i >= 0 && i < len(runes); i++ {
			r := runes[i]
			switch {
			case quote == '"':
				if r == '\\' {
					i++
				} else if r == '"' {
					quote = 0
				}
			case quote == '\'':
				if r == '\'' {
					if i+1 < len(runes) && runes[i+1] == '\'' {
						i++
					} else {
						quote = 0
					}
				}
			case r == '"' || r == '\'':
				quote = r
			case r == '#' && (i == 0 || runes[i-1] == ' ' || runes[i-1] == '\t'):
				i = len(runes)
			case r == '[' || r == '{':
				depth++
			case r == ']' || r == '}':
				depth--
				if depth == 0 {
					return Position{Line: line, Column: i + 2}
				}
			}
		}
		line++
		col = 1
	}
	return s.lineEnd(len(s.lines))
}

// keyRange is the range of a mapping key node.
func (s *source) keyRange(k *yaml.Node) Range { return s.rangeOf(k) }

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML turns the source into one document node, reporting YAML-level
// problems. It returns nil when there is nothing to compile.
func parseYAML(src []byte, s *source, diags *diagList) *yaml.Node {
	if len(src) > MaxSourceBytes {
		diags.errorf(CodeTooLarge, Range{Start: Position{1, 1}, End: Position{1, 1}}, "",
			"source is %d bytes; the limit is %d bytes", len(src), MaxSourceBytes)
		return nil
	}
	if !utf8.Valid(src) {
		diags.errorf(CodeYAML, Range{Start: Position{1, 1}, End: Position{1, 1}}, "", "source is not valid UTF-8")
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			diags.errorf(CodeEmpty, Range{Start: Position{1, 1}, End: Position{1, 1}}, "", "the source contains no document")
			return nil
		}
		reportYAMLError(err, s, diags)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		r := s.rangeOf(&extra)
		diags.errorf(CodeYAMLMultiDoc, r, "", "the source contains more than one YAML document; put each definition in its own file")
	} else if !errors.Is(err, io.EOF) {
		reportYAMLError(err, s, diags)
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		diags.errorf(CodeEmpty, Range{Start: Position{1, 1}, End: Position{1, 1}}, "", "the source contains no document")
		return nil
	}
	root := doc.Content[0]
	if !checkTree(root, "", 1, s, diags) {
		return nil
	}
	return root
}

func reportYAMLError(err error, s *source, diags *diagList) {
	msg := err.Error()
	line := 1
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			line = n
		}
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	if line > len(s.lines) {
		line = len(s.lines)
	}
	if line < 1 {
		line = 1
	}
	diags.errorf(CodeYAML, Range{Start: Position{Line: line, Column: 1}, End: s.lineEnd(line)}, "", "YAML syntax error: %s", msg)
}

// checkTree enforces the YAML subset the language accepts: bounded depth, no
// anchors or aliases (no expansion bombs, one obvious meaning per node), only
// core-schema tags, string keys, and no duplicate keys. It reports false when
// the tree must not be walked further.
func checkTree(n *yaml.Node, path string, depth int, s *source, diags *diagList) bool {
	if depth > MaxNestingDepth {
		diags.errorf(CodeTooDeep, s.rangeOf(n), path, "nesting is deeper than %d levels", MaxNestingDepth)
		return false
	}
	ok := true
	if n.Kind == yaml.AliasNode {
		diags.errorf(CodeYAMLAlias, Range{Start: Position{n.Line, n.Column}, End: Position{n.Line, n.Column + 1 + utf8.RuneCountInString(n.Value)}}, path,
			"YAML aliases are not supported; repeat the value instead")
		return false
	}
	if n.Anchor != "" {
		diags.errorf(CodeYAMLAlias, Range{Start: Position{n.Line, n.Column}, End: Position{n.Line, n.Column + 1}}, path,
			"YAML anchors are not supported (anchor &%s)", n.Anchor)
		ok = false
	}
	switch n.Tag {
	case "", "!!str", "!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq", "!!timestamp", "!":
	default:
		diags.errorf(CodeYAMLTag, s.rangeOf(n), path, "YAML tag %s is not supported", n.Tag)
		ok = false
	}
	switch n.Kind {
	case yaml.MappingNode:
		seen := make(map[string]*yaml.Node, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				diags.errorf(CodeYAML, s.rangeOf(k), path, "mapping keys must be plain strings")
				ok = false
				continue
			}
			if k.Tag == "!!merge" {
				diags.errorf(CodeYAMLAlias, s.rangeOf(k), path, "YAML merge keys (<<) are not supported")
				ok = false
				continue
			}
			if first, dup := seen[k.Value]; dup {
				diags.errorf(CodeDuplicateKey, s.rangeOf(k), joinPath(path, k.Value),
					"key %q is already defined at line %d", k.Value, first.Line)
				ok = false
				continue
			}
			seen[k.Value] = k
			if !checkTree(v, joinPath(path, k.Value), depth+1, s, diags) {
				ok = false
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if !checkTree(c, joinPath(path, strconv.Itoa(i)), depth+1, s, diags) {
				ok = false
			}
		}
	}
	return ok
}

// joinPath appends a JSON Pointer segment, escaping "~" and "/".
func joinPath(path, seg string) string {
	seg = strings.ReplaceAll(seg, "~", "~0")
	seg = strings.ReplaceAll(seg, "/", "~1")
	return path + "/" + seg
}

// scalarValue converts a scalar node to its JSON value. Timestamps are kept as
// strings: JSON has no timestamp type and the text is what the author wrote.
func scalarValue(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("invalid boolean %q: %w", n.Value, err)
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return nil, fmt.Errorf("integer %q is out of range", n.Value)
		}
		return i, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("invalid number %q: %w", n.Value, err)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %q cannot be represented in JSON", n.Value)
		}
		return f, nil
	default:
		return n.Value, nil
	}
}

// isString reports whether a scalar node is a YAML string (after resolution).
func isString(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!str" || n.ShortTag() == "!!timestamp")
}

// toJSON converts a checked YAML subtree into JSON values (map[string]any,
// []any, string, int64, float64, bool, nil).
func toJSON(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return scalarValue(n)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := toJSON(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := toJSON(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	default:
		return nil, fmt.Errorf("unsupported YAML node")
	}
}
