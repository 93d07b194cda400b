// Package lang implements the Agent Bridge workflow definition language: a
// YAML format (camelCase keys) for workflows, actions, connector manifests and
// decision tables, with CEL expressions. Compile turns a source into a
// canonical JSON artifact that the workflow kernel executes, a SHA-256 digest
// of it, a source map and positioned diagnostics.
//
// Compile and Validate are pure functions of (source, filename, catalog
// lock, strict): no clock, no file system, no network, no global state, and
// Result.Encode is byte-for-byte deterministic, so the CLI and the HTTP API
// give identical answers. The language reference is docs/workflow-language.md.
package lang

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Options of a compilation.
type Options struct {
	// Filename labels diagnostics; it never changes the artifact.
	Filename string
	// Catalog resolves references. Without it references stay unresolved
	// and the result is partial.
	Catalog *CatalogLock
	// Strict promotes warnings to errors (not applied by Validate without a
	// catalog, where the spec says strict has no effect).
	Strict bool
}

// Result is the outcome of Compile. HTTP 200 can carry OK false.
type Result struct {
	// OK: no error diagnostics and the artifact is complete.
	OK bool `json:"ok"`
	// Partial: the artifact is missing or incomplete (errors, or references
	// that could not be resolved); it must not be executed.
	Partial bool `json:"partial"`
	// Artifact is canonical JSON (null when the source could not be read as
	// a definition at all).
	Artifact json.RawMessage `json:"artifact"`
	// Digest is "sha256:<hex>" of the artifact bytes; empty without one.
	Digest string `json:"digest"`
	// SourceMap maps workflow step ids to their source ranges.
	SourceMap map[string]Range `json:"source_map"`
	// Diagnostics are sorted by position, then code.
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// ValidationResult is the outcome of Validate.
type ValidationResult struct {
	Result
	// ValidationOK: the checks that could be made found no error. Without a
	// catalog this is partial validation and does not prove deployability.
	ValidationOK bool `json:"validationOk"`
}

// Encode serialises a result deterministically: struct fields in a fixed
// order, map keys sorted, the artifact's bytes exactly as digested (no HTML
// escaping anywhere).
func (r Result) Encode() ([]byte, error) { return encodeNoHTML(r) }

// Encode serialises a validation result deterministically.
func (r ValidationResult) Encode() ([]byte, error) { return encodeNoHTML(r) }

func encodeNoHTML(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode compile result: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Compile compiles a definition source.
func Compile(src []byte, opts Options) Result {
	c := newCompiler(src, opts)
	var art map[string]any
	guard(c.diags, func() { art = c.compile(src) })
	r, _ := c.finish(art, opts.Strict)
	return r
}

// Validate checks a source. With a catalog it is exactly Compile; without
// one it is partial validation: references stay unresolved, Strict has no
// effect, and ValidationOK reports whether the checks that could be made
// passed.
func Validate(src []byte, opts Options) ValidationResult {
	if opts.Catalog == nil {
		opts.Strict = false
	}
	c := newCompiler(src, opts)
	var art map[string]any
	guard(c.diags, func() { art = c.compile(src) })
	r, hasErr := c.finish(art, opts.Strict)
	return ValidationResult{Result: r, ValidationOK: !hasErr}
}

// guard turns a panic into a diagnostic: defence in depth around third-party
// parsers, so no input can crash the caller.
func guard(diags *diagList, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			diags.errorf(CodeInternal, Range{Start: Position{1, 1}, End: Position{1, 1}}, "", "internal compiler error: %v", r)
		}
	}()
	fn()
}

// compiler is the state of one compilation.
type compiler struct {
	opts     Options
	src      *source
	diags    *diagList
	reg      *typeRegistry
	ss       *schemaSet
	cat      *catalogIndex
	jobs     []*exprJob
	builtins map[string]*schemaDoc
	// refs is the artifact's reference table, by reference text.
	refs map[string]map[string]any
	// entryDocs memoises the compiled schemas of catalog entries.
	entryDocs map[*CatalogEntry]*entrySchemas
	// unresolved is set when a reference could not be resolved.
	unresolved bool
	sourceMap  map[string]Range

	// Expression checking runs on worker goroutines fed by addExpr.
	leaders     map[jobKey]*exprJob
	queue       chan *exprJob
	queueClosed bool
	workers     sync.WaitGroup
}

type entrySchemas struct {
	input, output *schemaDoc
}

func newCompiler(src []byte, opts Options) *compiler {
	diags := &diagList{file: opts.Filename}
	return &compiler{
		opts:      opts,
		src:       newSource(src),
		diags:     diags,
		builtins:  map[string]*schemaDoc{},
		refs:      map[string]map[string]any{},
		entryDocs: map[*CatalogEntry]*entrySchemas{},
		sourceMap: map[string]Range{},
		leaders:   map[jobKey]*exprJob{},
	}
}

func (c *compiler) compile(src []byte) map[string]any {
	defer c.stopWorkers() // never leave workers behind, even on a panic
	f := parseSource(src, c.src, c.diags)
	if f == nil {
		return nil
	}
	reg, err := newTypeRegistry()
	if err != nil {
		c.diags.errorf(CodeInternal, Range{}, "", "%v", err)
		return nil
	}
	c.reg = reg
	c.ss = newSchemaSet(reg, c.src, c.diags)
	if c.opts.Catalog != nil {
		c.cat = newCatalogIndex(c.opts.Catalog)
		schemas := append([]CatalogSchema(nil), c.opts.Catalog.Schemas...)
		sort.SliceStable(schemas, func(i, j int) bool { return schemas[i].ID < schemas[j].ID })
		for _, s := range schemas {
			if err := c.ss.addCatalogSchema(s.ID, s.Schema); err != nil {
				c.diags.errorf(CodeSchema, Range{}, "", "catalog lock: %v", err)
			}
		}
	}
	var art map[string]any
	switch f.Kind {
	case KindWorkflow:
		art = c.compileWorkflow(f.Workflow)
	case KindAction:
		art = c.compileAction(f.Action)
	case KindConnector:
		art = c.compileConnector(f.Connector)
	case KindDecisionTable:
		art = c.compileDecisionTable(f.DecisionTable)
	}
	c.runJobs()
	return art
}

// finish settles diagnostics and serialises the artifact; it also reports
// whether any error was found (some may be beyond MaxDiagnostics).
func (c *compiler) finish(art map[string]any, strict bool) (Result, bool) {
	diags, hasErr := c.diags.finish(strict)
	res := Result{Diagnostics: diags, SourceMap: c.sourceMap, Artifact: json.RawMessage("null")}
	res.Partial = art == nil || hasErr || c.unresolved
	res.OK = !res.Partial
	if art == nil {
		return res, hasErr
	}
	art["partial"] = res.Partial
	b, err := encodeCanonical(art)
	if err != nil {
		// Only reachable through a bug; report instead of crashing.
		res.Diagnostics = append(res.Diagnostics, Diagnostic{Code: CodeInternal, Severity: SeverityError,
			Message: fmt.Sprintf("internal compiler error: %v", err), File: c.opts.Filename})
		res.OK, res.Partial = false, true
		return res, true
	}
	sum := sha256.Sum256(b)
	res.Artifact = b
	res.Digest = "sha256:" + hex.EncodeToString(sum[:])
	return res, hasErr
}
