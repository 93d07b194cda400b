package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/lang"
)

// docExample returns the first ```yaml block and the catalog block of the
// language reference, which the lang tests also compile.
func docExample(t *testing.T) (src, catalog string) {
	t.Helper()
	data, err := os.ReadFile("../docs/workflow-language.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	y := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(doc)
	c := regexp.MustCompile("(?s)```json catalog\n(.*?)```").FindStringSubmatch(doc)
	if y == nil || c == nil {
		t.Fatal("reference examples not found")
	}
	return y[1], c[1]
}

func TestWorkflowCompile(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	src, catalog := docExample(t)
	file := filepath.Join(dir, "example.yaml")
	lock := filepath.Join(dir, "catalog.json")
	is.NoErr(os.WriteFile(file, []byte(src), 0o600))
	is.NoErr(os.WriteFile(lock, []byte(catalog), 0o600))

	code, out, _ := run(context.Background(), "workflow", "compile", file, "--catalog", lock)
	is.Equal(code, 0)
	is.True(strings.Contains(out, "ok: "))

	// --json is exactly the compiler's encoded result (what the HTTP API sends).
	code, out, _ = run(context.Background(), "workflow", "compile", file, "--catalog", lock, "--json")
	is.Equal(code, 0)
	cat, err := lang.ParseCatalogLock([]byte(catalog))
	is.NoErr(err)
	want, err := lang.Compile([]byte(src), lang.Options{Filename: "example.yaml", Catalog: cat}).Encode()
	is.NoErr(err)
	is.Equal(out, string(want)+"\n")

	code, _, _ = run(context.Background(), "workflow", "validate", file)
	is.Equal(code, ExitPartial) // without a catalog the references stay unresolved
}

func TestWorkflowCompileReportsPositions(t *testing.T) {
	is := is.New(t)
	file := filepath.Join(t.TempDir(), "bad.yaml")
	is.NoErr(os.WriteFile(file, []byte("kind: workflow\nid: demo/bad\nsteps:\n  - id: first\n    set: {x: 1}\n    bogus: true\n"), 0o600))
	code, out, _ := run(context.Background(), "workflow", "compile", file)
	is.Equal(code, ExitError)
	is.True(strings.Contains(out, file+":6:5: error LANG-UNKNOWN-KEY"))
	is.True(strings.Contains(out, "failed: "))

	code, _, errw := run(context.Background(), "workflow", "compile", filepath.Join(t.TempDir(), "missing.yaml"))
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "read definition"))
	code, _, _ = run(context.Background(), "workflow", "compile")
	is.Equal(code, ExitUsage)
	code, _, errw = run(context.Background(), "workflow", "compile", file, "--catalog", file)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "catalog lock"))
}

// TestWorkflowCompileExitCodes: ok (warnings allowed) exits 0, a partial
// result without errors exits ExitPartial, errors exit 1, as --help says;
// the shipped example compiles against the shipped catalog lock.
func TestWorkflowCompileExitCodes(t *testing.T) {
	is := is.New(t)
	file := "../examples/fulfil-order/6-fulfil-order.yaml"
	for _, verb := range []string{"compile", "validate"} {
		code, out, _ := run(context.Background(), "workflow", verb, file)
		is.Equal(code, ExitPartial) // only LANG-REF-UNRESOLVED warnings
		is.True(strings.Contains(out, "warning LANG-REF-UNRESOLVED"))
		is.True(!strings.Contains(out, " error "))
		is.True(strings.Contains(out, "partial: "))
		code, out, _ = run(context.Background(), "workflow", verb, file, "--json")
		is.Equal(code, ExitPartial)
		is.True(strings.Contains(out, `"partial":true`))
	}
	code, out, _ := run(context.Background(), "workflow", "compile", file, "--catalog", "../examples/fulfil-order/catalog.lock.json")
	is.Equal(code, 0)
	is.True(strings.Contains(out, "ok: "))
	// --strict makes the unresolved references errors.
	code, _, _ = run(context.Background(), "workflow", "compile", file, "--strict")
	is.Equal(code, ExitError)

	// A warning that leaves the result whole (an unreachable step) exits 0.
	warned := filepath.Join(t.TempDir(), "warned.yaml")
	is.NoErr(os.WriteFile(warned, []byte("kind: workflow\nid: t/w\nsteps:\n  - id: a\n    fail: {code: BOOM}\n  - id: b\n    wait: 1s\n"), 0o600))
	code, out, _ = run(context.Background(), "workflow", "compile", warned)
	is.Equal(code, 0)
	is.True(strings.Contains(out, "warning LANG-UNREACHABLE"))
	is.True(strings.Contains(out, "ok: "))

	// The help states the same codes.
	code, out, _ = run(context.Background(), "workflow", "compile", "--help")
	is.Equal(code, 0)
	is.True(strings.Contains(out, "Exit code 0 when the definition compiles"))
	is.True(strings.Contains(out, "4 when the result is partial"))
}
