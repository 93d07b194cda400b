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
	is.True(code == 0 || code == ExitError) // partial without a catalog is allowed to fail strictness
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
