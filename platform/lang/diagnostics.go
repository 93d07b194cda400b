package lang

import (
	"fmt"
	"sort"
)

// Severity of a diagnostic.
type Severity string

// Severities. Only errors make a result not OK; Strict promotes warnings to errors.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Position is a 1-based line and column in the source. Columns count Unicode
// code points, the way the YAML parser counts them.
type Position struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Range is a half-open source range: End is the position just after the last
// character. A zero Range means "no position" (e.g. catalog problems).
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

func (r Range) before(o Range) bool {
	if r.Start.Line != o.Start.Line {
		return r.Start.Line < o.Start.Line
	}
	if r.Start.Column != o.Start.Column {
		return r.Start.Column < o.Start.Column
	}
	if r.End.Line != o.End.Line {
		return r.End.Line < o.End.Line
	}
	return r.End.Column < o.End.Column
}

// Diagnostic is one finding of the compiler. Code is a stable identifier
// documented in docs/workflow-language.md; Message is for people and may change.
type Diagnostic struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Range    Range    `json:"range"`
	// Path is a JSON Pointer to the YAML node the diagnostic is about
	// ("/steps/2/with/amount"); empty for the whole document.
	Path string `json:"path"`
	// File is Options.Filename, so that tools can print file:line:col.
	File string `json:"file,omitempty"`
}

// String renders "file:line:col: severity CODE: message".
func (d Diagnostic) String() string {
	file := d.File
	if file == "" {
		file = "<source>"
	}
	return fmt.Sprintf("%s:%d:%d: %s %s: %s", file, d.Range.Start.Line, d.Range.Start.Column, d.Severity, d.Code, d.Message)
}

// Diagnostic codes. They are part of the contract: tools match on them.
const (
	CodeTooLarge       = "LANG-TOO-LARGE"
	CodeTooDeep        = "LANG-TOO-DEEP"
	CodeEmpty          = "LANG-EMPTY"
	CodeYAML           = "LANG-YAML"
	CodeYAMLMultiDoc   = "LANG-YAML-MULTIDOC"
	CodeYAMLAlias      = "LANG-YAML-ALIAS"
	CodeYAMLTag        = "LANG-YAML-TAG"
	CodeDuplicateKey   = "LANG-DUPLICATE-KEY"
	CodeUnknownKey     = "LANG-UNKNOWN-KEY"
	CodeMissingKey     = "LANG-MISSING-KEY"
	CodeType           = "LANG-TYPE"
	CodeInvalidValue   = "LANG-INVALID-VALUE"
	CodeKind           = "LANG-KIND"
	CodeStepKind       = "LANG-STEP-KIND"
	CodeInvalidID      = "LANG-INVALID-ID"
	CodeDuration       = "LANG-DURATION"
	CodeDuplicateID    = "LANG-DUPLICATE-ID"
	CodeUnknownTarget  = "LANG-UNKNOWN-TARGET"
	CodeUnknownVar     = "LANG-UNKNOWN-VAR"
	CodeTargetScope    = "LANG-TARGET-SCOPE"
	CodeUnreachable    = "LANG-UNREACHABLE"
	CodeCycle          = "LANG-CYCLE"
	CodeExprSyntax     = "LANG-EXPR-SYNTAX"
	CodeExprType       = "LANG-EXPR-TYPE"
	CodeExprStepRef    = "LANG-EXPR-STEP-REF"
	CodeSchema         = "LANG-SCHEMA"
	CodeSchemaMismatch = "LANG-SCHEMA-MISMATCH"
	CodeSecretLiteral  = "LANG-SECRET-LITERAL"
	CodeSecretUnmarked = "LANG-SECRET-UNMARKED"
	CodeRefSyntax      = "LANG-REF-SYNTAX"
	CodeRefUnresolved  = "LANG-REF-UNRESOLVED"
	CodeRefUnknown     = "LANG-REF-UNKNOWN"
	CodeRefAmbiguous   = "LANG-REF-AMBIGUOUS"
	CodeRefVersion     = "LANG-REF-VERSION"
	CodeRefKind        = "LANG-REF-KIND"
	CodeSideEffect     = "LANG-SIDE-EFFECT"
	CodeRetryUnsafe    = "LANG-RETRY-UNSAFE"
	CodeDecisionTable  = "LANG-DECISION-TABLE"
	CodeInternal       = "LANG-INTERNAL"
)

// AllCodes lists every diagnostic code the compiler can emit, sorted.
func AllCodes() []string {
	codes := []string{
		CodeTooLarge, CodeTooDeep, CodeEmpty, CodeYAML, CodeYAMLMultiDoc, CodeYAMLAlias,
		CodeYAMLTag, CodeDuplicateKey, CodeUnknownKey, CodeMissingKey, CodeType,
		CodeInvalidValue, CodeKind, CodeStepKind, CodeInvalidID, CodeDuration,
		CodeDuplicateID, CodeUnknownTarget, CodeUnknownVar, CodeTargetScope, CodeUnreachable, CodeCycle,
		CodeExprSyntax, CodeExprType, CodeExprStepRef, CodeSchema, CodeSchemaMismatch,
		CodeSecretLiteral, CodeSecretUnmarked, CodeRefSyntax, CodeRefUnresolved,
		CodeRefUnknown, CodeRefAmbiguous, CodeRefVersion, CodeRefKind, CodeSideEffect,
		CodeRetryUnsafe, CodeDecisionTable, CodeInternal,
	}
	sort.Strings(codes)
	return codes
}

// diagList collects diagnostics during one compilation.
type diagList struct {
	file  string
	items []Diagnostic
}

func (l *diagList) add(sev Severity, code string, r Range, path, format string, args ...any) {
	l.items = append(l.items, Diagnostic{
		Code:     code,
		Severity: sev,
		Message:  fmt.Sprintf(format, args...),
		Range:    r,
		Path:     path,
		File:     l.file,
	})
}

func (l *diagList) errorf(code string, r Range, path, format string, args ...any) {
	l.add(SeverityError, code, r, path, format, args...)
}

func (l *diagList) warnf(code string, r Range, path, format string, args ...any) {
	l.add(SeverityWarning, code, r, path, format, args...)
}

func (l *diagList) hasErrors() bool {
	for _, d := range l.items {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// finish sorts by position, code and message, removes exact duplicates and,
// in strict mode, promotes warnings to errors. Sorting on all fields makes the
// order independent of the order checks ran in.
func (l *diagList) finish(strict bool) (diags []Diagnostic, hasErrors bool) {
	out := make([]Diagnostic, 0, len(l.items))
	for _, d := range l.items {
		if strict && d.Severity == SeverityWarning {
			d.Severity = SeverityError
		}
		hasErrors = hasErrors || d.Severity == SeverityError
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Range != b.Range {
			return a.Range.before(b.Range)
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Message != b.Message {
			return a.Message < b.Message
		}
		return a.Severity < b.Severity
	})
	dedup := out[:0]
	for i, d := range out {
		if i > 0 && d == out[i-1] {
			continue
		}
		dedup = append(dedup, d)
	}
	if len(dedup) > MaxDiagnostics {
		last := dedup[MaxDiagnostics-1]
		omitted := len(dedup) - MaxDiagnostics
		dedup = append(dedup[:MaxDiagnostics], Diagnostic{
			Code: CodeTooLarge, Severity: SeverityInfo, File: l.file,
			Message: fmt.Sprintf("%d more diagnostics are not shown", omitted),
			Range:   Range{Start: last.Range.End, End: last.Range.End},
		})
	}
	return dedup, hasErrors
}

// MaxDiagnostics bounds the diagnostics of one result; the rest are counted
// in a final LANG-TOO-LARGE info diagnostic.
const MaxDiagnostics = 1000
