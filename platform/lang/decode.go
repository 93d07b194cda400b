package lang

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decoder turns YAML nodes into AST values, reporting every structural
// problem (unknown keys, wrong value types, bad identifiers) with its range.
type decoder struct {
	src   *source
	diags *diagList
}

// object is a mapping node whose keys have been checked against a key set.
type object struct {
	node *yaml.Node
	path string
	keys map[string]*yaml.Node
	vals map[string]*yaml.Node
}

func (o *object) get(key string) *yaml.Node {
	if o == nil {
		return nil
	}
	return o.vals[key]
}

func (o *object) has(key string) bool { return o.get(key) != nil }

func (o *object) sub(key string) string { return joinPath(o.path, key) }

// object checks that n is a mapping whose keys are all in allowed.
func (d *decoder) object(n *yaml.Node, path, what string, allowed []string) *object {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.diags.errorf(CodeType, d.src.rangeOf(n), path, "%s must be a mapping", what)
		return nil
	}
	o := &object{node: n, path: path, keys: map[string]*yaml.Node{}, vals: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !contains(allowed, k.Value) {
			msg := "unknown key %q in %s"
			args := []any{k.Value, what}
			if s := suggest(k.Value, allowed); s != "" {
				msg += "; did you mean %q?"
				args = append(args, s)
			}
			d.diags.errorf(CodeUnknownKey, d.src.rangeOf(k), joinPath(path, k.Value), msg, args...)
			continue
		}
		o.keys[k.Value] = k
		o.vals[k.Value] = v
	}
	return o
}

func (d *decoder) missing(o *object, key, what string) {
	d.diags.errorf(CodeMissingKey, d.keyOrNodeRange(o), o.path, "%s is missing required key %q", what, key)
}

// keyOrNodeRange points at the first line of a mapping, where a missing key
// would be written.
func (d *decoder) keyOrNodeRange(o *object) Range { return d.src.rangeOf(firstKey(o.node)) }

// firstKey is where a mapping's report goes: its first key, or the mapping
// itself when it is empty.
func firstKey(n *yaml.Node) *yaml.Node {
	if len(n.Content) > 0 {
		return n.Content[0]
	}
	return n
}

// str reads a string value; required keys that are absent are reported.
func (d *decoder) str(o *object, key, what string, required bool) (string, *yaml.Node) {
	n := o.get(key)
	if n == nil {
		if required && o != nil {
			d.missing(o, key, what)
		}
		return "", nil
	}
	if !isString(n) {
		d.diags.errorf(CodeType, d.src.rangeOf(n), o.sub(key), "%s: %q must be a string", what, key)
		return "", nil
	}
	return n.Value, n
}

// integer reads an integer within [lo, hi].
func (d *decoder) integer(o *object, key, what string, lo, hi int64) (int64, bool) {
	n := o.get(key)
	if n == nil {
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.diags.errorf(CodeType, d.src.rangeOf(n), o.sub(key), "%s: %q must be an integer", what, key)
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	if err != nil || v < lo || v > hi {
		d.diags.errorf(CodeInvalidValue, d.src.rangeOf(n), o.sub(key), "%s: %q must be between %d and %d", what, key, lo, hi)
		return 0, false
	}
	return v, true
}

// number reads a number (integer or float) within [lo, hi].
func (d *decoder) number(o *object, key, what string, lo, hi float64) (float64, bool) {
	n := o.get(key)
	if n == nil {
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		d.diags.errorf(CodeType, d.src.rangeOf(n), o.sub(key), "%s: %q must be a number", what, key)
		return 0, false
	}
	var f float64
	if err := n.Decode(&f); err != nil || f < lo || f > hi || f != f {
		d.diags.errorf(CodeInvalidValue, d.src.rangeOf(n), o.sub(key), "%s: %q must be between %g and %g", what, key, lo, hi)
		return 0, false
	}
	return f, true
}

// strList reads a sequence of strings.
func (d *decoder) strList(o *object, key, what string) ([]string, []*yaml.Node) {
	n := o.get(key)
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		d.diags.errorf(CodeType, d.src.rangeOf(n), o.sub(key), "%s: %q must be a list of strings", what, key)
		return nil, nil
	}
	var out []string
	var nodes []*yaml.Node
	for i, c := range n.Content {
		if !isString(c) {
			d.diags.errorf(CodeType, d.src.rangeOf(c), joinPath(o.sub(key), strconv.Itoa(i)), "%s: %q must be a list of strings", what, key)
			continue
		}
		out = append(out, c.Value)
		nodes = append(nodes, c)
	}
	return out, nodes
}

// duration reads a literal duration; positive requires > 0.
func (d *decoder) duration(o *object, key, what string, positive bool) *Duration {
	n := o.get(key)
	if n == nil {
		return nil
	}
	if !isString(n) {
		d.diags.errorf(CodeDuration, d.src.rangeOf(n), o.sub(key), "%s: %q must be a duration with a unit such as 30s, 5m, 1h30m or PT30S", what, key)
		return nil
	}
	ms, err := ParseDuration(n.Value)
	if err != nil {
		d.diags.errorf(CodeDuration, d.src.rangeOf(n), o.sub(key), "%s: %v", what, err)
		return nil
	}
	if positive && ms == 0 {
		d.diags.errorf(CodeDuration, d.src.rangeOf(n), o.sub(key), "%s: %q must be longer than zero", what, key)
		return nil
	}
	return &Duration{Node: Node{YAML: n, Path: o.sub(key)}, Ms: ms}
}

func (d *decoder) value(o *object, key string) *Value {
	n := o.get(key)
	if n == nil {
		return nil
	}
	return &Value{Node{YAML: n, Path: o.sub(key)}}
}

func (d *decoder) schema(o *object, key string) *Schema {
	n := o.get(key)
	if n == nil {
		return nil
	}
	return &Schema{Node: Node{YAML: n, Path: o.sub(key)}}
}

func (d *decoder) target(o *object, key, what string) *Target {
	name, n := d.str(o, key, what, false)
	if n == nil {
		return nil
	}
	return &Target{Node: Node{YAML: n, Path: o.sub(key)}, Name: name}
}

// enum reads a string restricted to a set of values.
func (d *decoder) enum(o *object, key, what string, values []string, required bool) (string, *yaml.Node) {
	s, n := d.str(o, key, what, required)
	if n == nil {
		return "", nil
	}
	if !contains(values, s) {
		d.diags.errorf(CodeInvalidValue, d.src.rangeOf(n), o.sub(key), "%s: %q must be one of %s, not %q", what, key, strings.Join(values, ", "), s)
		return "", nil
	}
	return s, n
}

var (
	definitionIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$`)
	identRE        = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	signalNameRE   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)
	errorCodeRE    = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// celReserved are words CEL reserves; identifiers that clash cannot be used
// in expressions (steps.in would not parse).
var celReserved = []string{"as", "break", "const", "continue", "else", "false", "for", "function", "if",
	"import", "in", "let", "loop", "package", "namespace", "null", "return", "true", "var", "void", "while"}

// validIdent reports whether s can name a step, variable, loop variable or
// branch: a CEL identifier that is not reserved and not "end".
func validIdent(s string) bool {
	return len(s) <= 64 && identRE.MatchString(s) && !contains(celReserved, s) && s != "end"
}

// meta reads id, version, title and description.
func (d *decoder) meta(o *object, what string) Meta {
	var m Meta
	id, idNode := d.str(o, "id", what, true)
	if idNode != nil {
		if len(id) > 128 || !definitionIDRE.MatchString(id) {
			d.diags.errorf(CodeInvalidID, d.src.rangeOf(idNode), o.sub("id"),
				"%s id %q must be lowercase segments of letters, digits, '.', '_' or '-' separated by '/', at most 128 characters (e.g. acme/send-email)", what, id)
		} else {
			m.ID, m.IDNode = id, idNode
		}
	}
	m.Version = 1
	if v, ok := d.integer(o, "version", what, 1, maxVersion); ok {
		m.Version = int(v)
	}
	m.Title, _ = d.str(o, "title", what, false)
	m.Description, _ = d.str(o, "description", what, false)
	return m
}

const maxVersion = 999999999

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// maxSuggestCandidates bounds the work spent on "did you mean" hints.
const maxSuggestCandidates = 256

// suggest returns the allowed key closest to k, when one is close enough to
// be a likely typo (edit distance <= 2, or equal ignoring case and _/-).
func suggest(k string, allowed []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	if len(allowed) > maxSuggestCandidates {
		return "" // suggestions are a courtesy; keep them cheap
	}
	sorted := append([]string(nil), allowed...)
	sort.Strings(sorted)
	best, bestDist := "", 3
	for _, a := range sorted {
		if norm(a) == norm(k) {
			return a
		}
		if dist := editDistance(k, a, bestDist); dist < bestDist {
			best, bestDist = a, dist
		}
	}
	return best
}

// editDistance is Levenshtein distance, giving up (returning limit) once it
// cannot be below limit. Keys are short; inputs are bounded by the caller.
func editDistance(a, b string, limit int) int {
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	ra, rb := []rune(a), []rune(b)
	if abs(len(ra)-len(rb)) >= limit {
		return limit
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
