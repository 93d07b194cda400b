package api

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// specCode is a problem code as the spec spells them.
var specCode = regexp.MustCompile(`^PF-[A-Z0-9_-]+$`)

// notProblems are PF- strings of the platform that are not problem codes:
// the kernel's incident kinds (docs/platform-api.md, "Incidents"), shown in
// an incident's body, never as a problem.
var notProblems = map[string]bool{
	"PF-TASK-FAILED": true, "PF-TASK-AMBIGUOUS": true, "PF-TASK-DEADLINE": true, "PF-TASK-RETRIES-EXHAUSTED": true,
}

// TestErrorTableListsEveryCode: every PF- code written in the platform's
// code (and wire's) has a row of errorTable, so no code is answered with
// a status chosen anywhere else (a code without a row is a 500).
func TestErrorTableListsEveryCode(t *testing.T) {
	found := map[string]string{}
	for _, root := range []string{"..", "../../wire"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := goparser.ParseFile(token.NewFileSet(), path, nil, goparser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && specCode.MatchString(s) && !notProblems[s] {
						found[s] = path
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) < 40 {
		t.Fatalf("found only %d codes: the scan is broken", len(found))
	}
	for code, path := range found {
		if _, ok := errorTable.Codes[code]; !ok {
			t.Errorf("%s (in %s) has no row in errorTable", code, path)
		}
	}
}

// TestErrorTableMatchesTheDocs: every "<status> `PF-...`" the reference
// (docs/platform-api.md) states is a row of errorTable answering that code
// with that status, and every spec code's row answers the code itself.
func TestErrorTableMatchesTheDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/platform-api.md")
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]map[int]bool{} // wire code -> statuses the table answers it with
	for key, m := range errorTable.Codes {
		if specCode.MatchString(key) && m.Code != key {
			t.Errorf("row %s answers %s", key, m.Code)
		}
		if answers[m.Code] == nil {
			answers[m.Code] = map[int]bool{}
		}
		answers[m.Code][m.Status] = true
	}
	stated := regexp.MustCompile("\\b([1-5][0-9]{2})(?: \\| | )`(PF-[A-Z0-9_-]+)`")
	n := 0
	for _, m := range stated.FindAllStringSubmatch(string(doc), -1) {
		status, _ := strconv.Atoi(m[1])
		n++
		if !answers[m[2]][status] {
			t.Errorf("docs/platform-api.md states %d %s; errorTable answers %s with %v", status, m[2], m[2], answers[m[2]])
		}
	}
	if n < 50 {
		t.Fatalf("found only %d stated statuses: the scan is broken", n)
	}
	// The two codes the spec answers with two statuses.
	for _, c := range []struct {
		err    *Error
		status int
	}{
		{InvalidParameter(CodeETag, "If-Match", "missing"), 422},
		{StaleRevision(2, "stale"), 412},
		{NotFound("session"), 404},
		{Closed("closed"), 410},
	} {
		if c.err.Status() != c.status {
			t.Errorf("%v: status %d, want %d", c.err, c.err.Status(), c.status)
		}
	}
}

// TestRefusalClass: the class of a refusal follows its code's row.
func TestRefusalClass(t *testing.T) {
	for _, c := range []struct {
		err                                               *Error
		capacity, invalid, conflict, serverSide, internal bool
	}{
		{Errorf("PF-OPERATION-CAPACITY", "full"), true, false, false, false, false},
		{Errorf("PF-STEPTEST-BUSY", "busy"), true, false, false, false, false},
		{Invalid("/a", "bad"), false, true, false, false, false},
		{Errorf("PF-SCHEDULE-RANGE", "never"), false, true, false, false, false},
		{StaleRevision(1, "stale"), false, false, false, false, false},
		{Conflict(CodeConflict, "retired"), false, false, true, false, false},
		{Errorf("PF-RUNTIME-STATE", "ended"), false, false, true, false, false},
		{Errorf("PF-COMPATIBILITY", "later"), false, false, false, true, false},
		{Errorf(CodeInternal, "boom"), false, false, false, true, true},
		{Errorf("PF-UNLISTED", "?"), false, false, false, true, true},
	} {
		got := [5]bool{c.err.IsCapacity(), c.err.IsInvalid(), c.err.IsConflict(), c.err.IsServerSide(), c.err.IsInternal()}
		if want := [5]bool{c.capacity, c.invalid, c.conflict, c.serverSide, c.internal}; got != want {
			t.Errorf("%v: %v, want %v", c.err, got, want)
		}
	}
}

// statusUsers are the platform files outside *_http.go, route tables and
// this package that may name HTTP statuses, and why.
var statusUsers = map[string]string{
	"auth/idp.go":              "the identity provider's OAuth surface: its own table (oauthStatus) and the 200s it answers",
	"auth/jwks.go":             "an HTTP client reading the key set's answer",
	"engine/http_connector.go": "an HTTP client reading the called service's answer",
}

// TestDomainCodeChoosesNoStatus: outside *_http.go files (success
// statuses), route tables and platform/api, platform code names no HTTP
// status: it returns coded errors and errorTable chooses.
func TestDomainCodeChoosesNoStatus(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && filepath.Base(path) == "api" {
				return filepath.SkipDir
			}
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, ".."+string(filepath.Separator)))
		base := filepath.Base(path)
		if !strings.HasSuffix(base, ".go") || strings.HasSuffix(base, "_test.go") || strings.HasSuffix(base, "_http.go") ||
			base == "routes.go" || statusUsers[rel] != "" {
			return nil
		}
		f, err := goparser.ParseFile(token.NewFileSet(), path, nil, goparser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Status") {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "http" {
					t.Errorf("%s names http.%s: return a coded error (platform/api/codes.go)", rel, sel.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
