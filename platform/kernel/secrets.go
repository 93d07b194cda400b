package kernel

import (
	"fmt"
	"slices"
	"sort"

	"github.com/agentbridge/bridge/platform/lang"
)

// maxSecretPointers caps the pointers of one schema, like the compiler's
// list in the artifact.
const maxSecretPointers = 256

// Secrets says where the values of a run hold secrets: the positions whose
// schema marks them x-secret (or writeOnly), as JSON Pointers with "*" for
// any element or member ("" is the whole value). Whoever shows, exports or
// publishes a run's values redacts them there.
type Secrets struct {
	// Input and Output are the run's input and output. They are computed
	// like the rest rather than taken from the artifact: the compiler's
	// lists skip recursive references and write the whole value as "/".
	Input, Output []string
	// Vars are by variable name.
	Vars map[string][]string
	// Steps are the outputs of action, decision, workflow and agent nodes,
	// by node id (pinned output schemas).
	Steps map[string][]string
	// Forms are the data of human nodes, by node id.
	Forms map[string][]string
	// Signals are signal payloads, by signal name: every signal step that
	// waits for the name contributes its schema's pointers.
	Signals map[string][]string
	// ToolInputs and ToolOutputs are the inputs and outputs of agent
	// steps' tool calls, by tool reference (pinned schemas).
	ToolInputs, ToolOutputs map[string][]string
}

// Secrets answers where the values of the program's runs hold secrets.
// Maps leave out what holds none.
func (p *Program) Secrets() Secrets {
	s := Secrets{Input: p.input.secretPointers(), Output: p.output.secretPointers(),
		Vars: map[string][]string{}, Steps: map[string][]string{}, Forms: map[string][]string{}, Signals: map[string][]string{},
		ToolInputs: map[string][]string{}, ToolOutputs: map[string][]string{}}
	put := func(m map[string][]string, key string, sc *schema) {
		if ptrs := sc.secretPointers(); len(ptrs) > 0 {
			m[key] = mergePointers(m[key], ptrs)
		}
	}
	for _, v := range p.vars {
		put(s.Vars, v.name, v.schema)
	}
	for _, n := range p.order {
		put(s.Steps, n.id, n.output)
		put(s.Forms, n.id, n.form)
		if n.signal != "" {
			put(s.Signals, n.signal, n.payload)
		}
		for ref, t := range n.tools {
			put(s.ToolInputs, ref, t.input)
			put(s.ToolOutputs, ref, t.output)
		}
	}
	return s
}

// mergePointers answers the sorted union of a and b.
func mergePointers(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	sort.Strings(out)
	return slices.Compact(out)
}

// secretPointers lists the pointers of the secret positions of a schema,
// the way the compiler does for the artifact: properties, additional
// properties and items are followed, at most maxSecretPointers. Unlike
// the compiler's, a recursive reference that can hold a secret is redacted
// whole rather than left out.
func (s *schema) secretPointers() []string {
	if s == nil {
		return nil
	}
	return s.markedPointers(isSecretSchema, func(r view) bool { return s.set.holdsSecret(r, map[string]bool{}) })
}

// markedPointers lists the pointers of the positions of a schema whose
// schema object satisfies marked (following properties, additional
// properties and items, at most maxSecretPointers). A recursive reference
// is listed whole ("" below it) when recursive reports it can hold a
// marked position; a nil recursive leaves it out.
func (s *schema) markedPointers(marked func(any) bool, recursive func(view) bool) []string {
	ss := s.set
	inProgress := map[string]bool{}
	var walk func(v view, depth int) []string
	walk = func(v view, depth int) []string {
		if v.v == nil || depth > 16 {
			return nil
		}
		r := ss.resolve(v)
		if marked(v.v) || marked(r.v) {
			return []string{""}
		}
		m, ok := r.v.(map[string]any)
		if !ok {
			return nil
		}
		key := location(r.url, m)
		if inProgress[key] {
			// A recursive reference: its values nest without bound, so
			// pointers cannot list them; the whole value is redacted when
			// it can hold a secret.
			if recursive != nil && recursive(r) {
				return []string{""}
			}
			return nil
		}
		inProgress[key] = true
		defer delete(inProgress, key)
		var out []string
		add := func(prefix string, sub []string) {
			for _, p := range sub {
				if len(out) < maxSecretPointers {
					out = append(out, prefix+p)
				}
			}
		}
		if props, ok := m["properties"].(map[string]any); ok {
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				add(lang.JSONPointer([]string{k}), walk(view{url: r.url, v: props[k]}, depth+1))
			}
		}
		if ap, ok := m["additionalProperties"].(map[string]any); ok {
			add("/*", walk(view{url: r.url, v: ap}, depth+1))
		}
		if it, ok := m["items"].(map[string]any); ok {
			add("/*", walk(view{url: r.url, v: it}, depth+1))
		}
		return out
	}
	return walk(s.root(), 0)
}

// isSecretSchema reports whether a schema object marks its value secret.
func isSecretSchema(v any) bool {
	m, ok := v.(map[string]any)
	return ok && (m["x-secret"] == true || m["writeOnly"] == true)
}

// location identifies a schema object for cycle detection.
func location(url string, m map[string]any) string {
	return url + fmt.Sprintf("#%p", m)
}

// holdsSecret reports whether a secret position is reachable from v.
func (ss *schemaSet) holdsSecret(v view, seen map[string]bool) bool {
	r := ss.resolve(v)
	if isSecretSchema(v.v) || isSecretSchema(r.v) {
		return true
	}
	m, ok := r.v.(map[string]any)
	if !ok || seen[location(r.url, m)] {
		return false
	}
	seen[location(r.url, m)] = true
	var subs []any
	if props, ok := m["properties"].(map[string]any); ok {
		for _, p := range props {
			subs = append(subs, p)
		}
	}
	subs = append(subs, m["additionalProperties"], m["items"])
	for _, sub := range subs {
		if _, ok := sub.(map[string]any); ok && ss.holdsSecret(view{url: r.url, v: sub}, seen) {
			return true
		}
	}
	return false
}
