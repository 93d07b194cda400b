package lang

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/platformtest"
)

const referencePath = "../../docs/workflow-language.md"

// readFences reads the code blocks of the reference.
func readFences(t testing.TB) []platformtest.Fence {
	t.Helper()
	fs, err := platformtest.Fences(referencePath)
	if err != nil {
		t.Fatalf("read reference: %v", err)
	}
	return fs
}

// TestReferenceExamples compiles every yaml block of the language reference
// against the reference's own catalog lock: blocks without expectations must
// compile with no diagnostic, "yaml expect=A,B" blocks must produce exactly
// the codes A and B.
func TestReferenceExamples(t *testing.T) {
	fences := readFences(t)
	var lock *CatalogLock
	for _, f := range fences {
		if f.Info == "json catalog" {
			l, err := ParseCatalogLock([]byte(f.Body))
			if err != nil {
				t.Fatalf("catalog lock at line %d: %v", f.Line, err)
			}
			lock = l
		}
	}
	if lock == nil {
		t.Fatal("the reference has no ```json catalog block")
	}
	kinds := map[string]bool{}
	steps := map[StepKind]bool{}
	examples := 0
	for _, f := range fences {
		fields := strings.Fields(f.Info)
		if len(fields) == 0 || fields[0] != "yaml" {
			continue
		}
		examples++
		var want []string
		for _, fl := range fields[1:] {
			if v, ok := strings.CutPrefix(fl, "expect="); ok {
				want = strings.Split(v, ",")
			}
		}
		r := Compile([]byte(f.Body), Options{Filename: "example", Catalog: lock})
		got := map[string]bool{}
		for _, d := range r.Diagnostics {
			got[d.Code] = true
		}
		var gotCodes []string
		for c := range got {
			gotCodes = append(gotCodes, c)
		}
		sort.Strings(gotCodes)
		sort.Strings(want)
		if strings.Join(gotCodes, ",") != strings.Join(want, ",") {
			for _, d := range r.Diagnostics {
				t.Logf("example at line %d: %s", f.Line, d)
			}
			t.Errorf("example at line %d: codes %v, want %v", f.Line, gotCodes, want)
			continue
		}
		if len(want) == 0 && !r.OK {
			t.Errorf("example at line %d is not OK", f.Line)
		}
		file, _ := Parse([]byte(f.Body), "example")
		if file != nil {
			kinds[file.Kind] = true
			if file.Workflow != nil {
				var walk func([]*Step)
				walk = func(list []*Step) {
					for _, s := range list {
						steps[s.Kind] = true
						walk(s.Body)
						for _, b := range s.Branches {
							walk(b.Steps)
						}
					}
				}
				walk(file.Workflow.Steps)
			}
		}
	}
	is := is.New(t)
	is.True(examples >= 20)
	for _, k := range []string{KindWorkflow, KindAction, KindConnector, KindDecisionTable} {
		is.True(kinds[k]) // every kind has an example
	}
	for _, k := range stepKinds {
		if !steps[k] {
			t.Errorf("no example uses a %s step", k)
		}
	}
}

// TestReferenceListsEveryCode keeps the diagnostics table and the code
// constants in step.
func TestReferenceListsEveryCode(t *testing.T) {
	raw, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(LANG-[A-Z-]+)` \\|").FindAllStringSubmatch(string(raw), -1) {
		table[m[1]] = true
	}
	codes := map[string]bool{}
	for _, c := range AllCodes() {
		codes[c] = true
		if !table[c] {
			t.Errorf("code %s is not in the reference's diagnostics table", c)
		}
	}
	for c := range table {
		if !codes[c] {
			t.Errorf("the reference documents %s, which the compiler does not define", c)
		}
	}
}
