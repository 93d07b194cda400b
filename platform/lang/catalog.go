package lang

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// CatalogLock pins the published definitions a compilation may reference.
// It is the body of GET P/catalog and the optional "catalog" of a compiler
// request; its JSON is snake_case like every platform API body.
type CatalogLock struct {
	// Definitions are published versions of workflows, actions, connectors
	// and decision tables.
	Definitions []CatalogEntry `json:"definitions"`
	// Tasks are the worker task queues known to the project.
	Tasks []CatalogTask `json:"tasks"`
	// Adapters are the connector adapters installed besides the built-ins.
	Adapters []CatalogAdapter `json:"adapters"`
	// Schemas are shared JSON Schemas; a source schema refers to one with
	// {"$ref": "catalog:schemas/<id>"}.
	Schemas []CatalogSchema `json:"schemas"`
}

// CatalogEntry is one published version.
type CatalogEntry struct {
	Kind               string          `json:"kind"`
	ID                 string          `json:"id"`
	Version            int             `json:"version"`
	PublishedVersionID string          `json:"published_version_id"`
	Digest             string          `json:"digest"`
	InputSchema        json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema       json.RawMessage `json:"output_schema,omitempty"`
	// SideEffect is required for actions.
	SideEffect string `json:"side_effect,omitempty"`
	// TimeoutMs and Retry are an action's defaults.
	TimeoutMs  int64               `json:"timeout_ms,omitempty"`
	DeadlineMs int64               `json:"deadline_ms,omitempty"`
	Retry      *CatalogRetryPolicy `json:"retry,omitempty"`
	// Adapter and Operations describe a connector manifest.
	Adapter    string   `json:"adapter,omitempty"`
	Operations []string `json:"operations,omitempty"`
}

// CatalogRetryPolicy is a normalised retry policy.
type CatalogRetryPolicy struct {
	MaxAttempts        int      `json:"max_attempts"`
	InitialIntervalMs  int64    `json:"initial_interval_ms"`
	BackoffCoefficient float64  `json:"backoff_coefficient"`
	MaxIntervalMs      int64    `json:"max_interval_ms"`
	NonRetryable       []string `json:"non_retryable,omitempty"`
}

// CatalogTask is a worker task queue.
type CatalogTask struct {
	Queue string `json:"queue"`
}

// CatalogAdapter is an installed connector adapter.
type CatalogAdapter struct {
	ID      string `json:"id"`
	Version string `json:"version,omitempty"`
}

// CatalogSchema is a shared schema.
type CatalogSchema struct {
	ID     string          `json:"id"`
	Schema json.RawMessage `json:"schema"`
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ParseCatalogLock decodes and validates a catalog lock. Unknown fields,
// malformed entries and duplicate (kind, id, version) entries are errors.
func ParseCatalogLock(data []byte) (*CatalogLock, error) {
	if len(data) > 16*MaxSourceBytes {
		return nil, fmt.Errorf("catalog lock: %d bytes is over the %d byte limit", len(data), 16*MaxSourceBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var l CatalogLock
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("catalog lock: %w", err)
	}
	if dec.More() {
		return nil, errors.New("catalog lock: trailing data after the JSON object")
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return &l, nil
}

// Validate checks every entry of the lock.
func (l *CatalogLock) Validate() error {
	var problems []string
	seen := map[string]bool{}
	kinds := []string{KindWorkflow, KindAction, KindConnector, KindDecisionTable}
	for i, e := range l.Definitions {
		at := fmt.Sprintf("definitions[%d]", i)
		if !contains(kinds, e.Kind) {
			problems = append(problems, fmt.Sprintf("%s: kind %q is not one of %s", at, e.Kind, strings.Join(kinds, ", ")))
		}
		if len(e.ID) > 128 || !definitionIDRE.MatchString(e.ID) {
			problems = append(problems, fmt.Sprintf("%s: invalid id %q", at, e.ID))
		}
		if e.Version < 1 || e.Version > maxVersion {
			problems = append(problems, fmt.Sprintf("%s: version must be a positive integer", at))
		}
		if e.PublishedVersionID == "" {
			problems = append(problems, fmt.Sprintf("%s: published_version_id is required", at))
		}
		if !digestRE.MatchString(e.Digest) {
			problems = append(problems, fmt.Sprintf("%s: digest must be sha256:<64 lowercase hex digits>", at))
		}
		if e.Kind == KindAction && !contains(sideEffects, e.SideEffect) {
			problems = append(problems, fmt.Sprintf("%s: an action needs side_effect, one of %s", at, strings.Join(sideEffects, ", ")))
		}
		if e.Kind != KindAction && e.SideEffect != "" {
			problems = append(problems, fmt.Sprintf("%s: side_effect is only for actions", at))
		}
		for name, raw := range map[string]json.RawMessage{"input_schema": e.InputSchema, "output_schema": e.OutputSchema} {
			if _, err := DecodeJSONSchema(raw); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s: %v", at, name, err))
			}
		}
		key := e.Kind + " " + e.ID + "@" + fmt.Sprint(e.Version)
		if seen[key] {
			problems = append(problems, fmt.Sprintf("%s: %s %s@%d is listed twice", at, e.Kind, e.ID, e.Version))
		}
		seen[key] = true
	}
	for i, s := range l.Schemas {
		if len(s.ID) > 128 || !definitionIDRE.MatchString(s.ID) {
			problems = append(problems, fmt.Sprintf("schemas[%d]: invalid id %q", i, s.ID))
		}
		if _, err := DecodeJSONSchema(s.Schema); err != nil || len(s.Schema) == 0 {
			problems = append(problems, fmt.Sprintf("schemas[%d]: schema must be a JSON Schema object or boolean", i))
		}
	}
	for i, t := range l.Tasks {
		if !signalNameRE.MatchString(t.Queue) {
			problems = append(problems, fmt.Sprintf("tasks[%d]: invalid queue name %q", i, t.Queue))
		}
	}
	for i, a := range l.Adapters {
		if !identRE.MatchString(a.ID) {
			problems = append(problems, fmt.Sprintf("adapters[%d]: invalid adapter id %q", i, a.ID))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return fmt.Errorf("catalog lock: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Canonical returns the lock as canonical JSON: entries sorted by kind, id
// and version, keys sorted, no insignificant whitespace.
func (l *CatalogLock) Canonical() ([]byte, error) {
	c := *l
	c.Definitions = append([]CatalogEntry(nil), l.Definitions...)
	sort.SliceStable(c.Definitions, func(i, j int) bool {
		a, b := c.Definitions[i], c.Definitions[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Version < b.Version
	})
	c.Tasks = append([]CatalogTask(nil), l.Tasks...)
	sort.SliceStable(c.Tasks, func(i, j int) bool { return c.Tasks[i].Queue < c.Tasks[j].Queue })
	c.Adapters = append([]CatalogAdapter(nil), l.Adapters...)
	sort.SliceStable(c.Adapters, func(i, j int) bool { return c.Adapters[i].ID < c.Adapters[j].ID })
	c.Schemas = append([]CatalogSchema(nil), l.Schemas...)
	sort.SliceStable(c.Schemas, func(i, j int) bool { return c.Schemas[i].ID < c.Schemas[j].ID })
	if c.Definitions == nil {
		c.Definitions = []CatalogEntry{}
	}
	if c.Tasks == nil {
		c.Tasks = []CatalogTask{}
	}
	if c.Adapters == nil {
		c.Adapters = []CatalogAdapter{}
	}
	if c.Schemas == nil {
		c.Schemas = []CatalogSchema{}
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode catalog lock: %w", err)
	}
	return CanonicalJSON(raw)
}

// Digest is "sha256:<hex>" of the canonical lock.
func (l *CatalogLock) Digest() (string, error) {
	b, err := l.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// catalogIndex resolves references against a lock.
type catalogIndex struct {
	lock *CatalogLock
	byID map[string][]*CatalogEntry // kind+" "+id -> entries
	// byName maps kind+" "+last path segment to the distinct ids with that
	// name, for short references.
	byName   map[string][]string
	adapters map[string]bool
	tasks    map[string]bool
}

func newCatalogIndex(l *CatalogLock) *catalogIndex {
	if l == nil {
		return nil
	}
	ix := &catalogIndex{lock: l, byID: map[string][]*CatalogEntry{}, byName: map[string][]string{},
		adapters: map[string]bool{}, tasks: map[string]bool{}}
	for i := range l.Definitions {
		e := &l.Definitions[i]
		k := e.Kind + " " + e.ID
		if len(ix.byID[k]) == 0 {
			name := e.ID[strings.LastIndex(e.ID, "/")+1:]
			ix.byName[e.Kind+" "+name] = append(ix.byName[e.Kind+" "+name], e.ID)
		}
		ix.byID[k] = append(ix.byID[k], e)
	}
	for k := range ix.byName {
		sort.Strings(ix.byName[k])
	}
	for _, a := range l.Adapters {
		ix.adapters[a.ID] = true
	}
	for _, t := range l.Tasks {
		ix.tasks[t.Queue] = true
	}
	return ix
}

// resolveError is a failed resolution with its diagnostic code.
type resolveError struct {
	code string
	msg  string
}

func (e *resolveError) Error() string { return e.msg }

// resolve finds the entry of kind for id@version. An id without "/" may name
// a definition by its last segment when exactly one id has that name.
func (ix *catalogIndex) resolve(kind, id string, version int) (*CatalogEntry, *resolveError) {
	entries := ix.byID[kind+" "+id]
	if len(entries) == 0 && !strings.Contains(id, "/") {
		ids := ix.byName[kind+" "+id]
		switch len(ids) {
		case 0:
		case 1:
			entries = ix.byID[kind+" "+ids[0]]
		default:
			return nil, &resolveError{CodeRefAmbiguous, fmt.Sprintf("%s %q is ambiguous: it could be %s; write the full id", kindLabel(kind), id, strings.Join(ids, " or "))}
		}
	}
	if len(entries) == 0 {
		for _, other := range []string{KindAction, KindWorkflow, KindDecisionTable, KindConnector} {
			if other != kind && len(ix.byID[other+" "+id]) > 0 {
				return nil, &resolveError{CodeRefKind, fmt.Sprintf("%s is a %s, not a %s", id, kindLabel(other), kindLabel(kind))}
			}
		}
		return nil, &resolveError{CodeRefUnknown, fmt.Sprintf("the catalog has no %s %q", kindLabel(kind), id)}
	}
	var match []*CatalogEntry
	var versions []int
	for _, e := range entries {
		versions = append(versions, e.Version)
		if e.Version == version {
			match = append(match, e)
		}
	}
	switch len(match) {
	case 0:
		sort.Ints(versions)
		vs := make([]string, len(versions))
		for i, v := range versions {
			vs[i] = fmt.Sprint(v)
		}
		return nil, &resolveError{CodeRefVersion, fmt.Sprintf("%s %s has no version %d in the catalog (available: %s)", kindLabel(kind), entries[0].ID, version, strings.Join(vs, ", "))}
	case 1:
		return match[0], nil
	default:
		return nil, &resolveError{CodeRefAmbiguous, fmt.Sprintf("the catalog lists %s %s@%d %d times; a lock must pin one published version", kindLabel(kind), entries[0].ID, version, len(match))}
	}
}

func kindLabel(kind string) string {
	if kind == KindDecisionTable {
		return "decision table"
	}
	return kind
}
