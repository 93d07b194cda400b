//go:build unix

package factory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func testPolicy() Policy {
	return Policy{CommandTimeout: Duration(time.Minute), MaxCommands: MaxCommands}
}

func commandsOf(cs []PlannedCheck) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Source+": "+strings.Join(c.Command, " "))
	}
	return out
}

func TestDetectChecks(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		files map[string]string
		want  []string
	}{
		"go":                       {map[string]string{"go.mod": "module x\n"}, []string{"go: go vet ./...", "go: go test ./..."}},
		"node":                     {map[string]string{"package.json": `{"scripts":{"test":"jest","lint":"eslint .","start":"node ."}}`}, []string{"node: npm run lint", "node: npm run test"}},
		"node default test script": {map[string]string{"package.json": `{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}`}, nil},
		"python":                   {map[string]string{"pyproject.toml": "[project]\n"}, []string{"python: python3 -m pytest -q"}},
		"rust":                     {map[string]string{"Cargo.toml": "[package]\n"}, []string{"rust: cargo test"}},
		"make":                     {map[string]string{"Makefile": "build:\n\tcc\ncheck: build\n\t./t\ntest:\n\t./t\n"}, []string{"make: make check", "make: make test"}},
		"make without targets":     {map[string]string{"Makefile": "all:\n\tcc\n"}, nil},
		"nothing":                  {map[string]string{"README.md": "hi"}, nil},
		"mixed": {map[string]string{"Makefile": "test:\n\tgo test ./...\n", "go.mod": "module x\n"},
			[]string{"make: make test", "go: go vet ./...", "go: go test ./..."}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := planChecks(writeFiles(t, c.files), testPolicy())
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(commandsOf(got)) != fmt.Sprint(c.want) {
				t.Fatalf("got %q, want %q", commandsOf(got), c.want)
			}
		})
	}
}

func TestFactoryYAMLOverridesDetection(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := writeFiles(t, map[string]string{"go.mod": "module x\n", ConfigFile: "verify:\n  - name: unit\n    run: go test -short ./...\n    timeout: 90s\n  - run: ./lint.sh\n"})
	got, err := planChecks(dir, testPolicy())
	is.NoErr(err)
	is.Equal(len(got), 2)
	is.Equal(got[0].Name, "unit")
	is.Equal(got[0].Command, shell("go test -short ./..."))
	is.Equal(got[0].TimeoutMS, int64(90000))
	is.Equal(got[1].Name, "./lint.sh")
	is.Equal(got[1].TimeoutMS, int64(60000))
	is.Equal(got[1].Source, ConfigFile)
	// The request's commands win over the file.
	p := testPolicy()
	p.Verify = []string{"make ci"}
	got, err = planChecks(dir, p)
	is.NoErr(err)
	is.Equal(commandsOf(got), []string{"request: " + strings.Join(shell("make ci"), " ")})
	// An empty verify list in the file means no checks: the run fails.
	got, err = planChecks(writeFiles(t, map[string]string{"go.mod": "module x\n", ConfigFile: "verify: []\n"}), testPolicy())
	is.NoErr(err)
	is.Equal(len(got), 0)
}

func TestFactoryYAMLErrors(t *testing.T) {
	t.Parallel()
	var twenty, twentyOne strings.Builder
	twenty.WriteString("verify:\n")
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&twenty, "  - run: check %d\n", i)
	}
	twentyOne.WriteString(twenty.String() + "  - run: one too many\n")
	cases := map[string]string{
		"unknown key":   "verify:\n  - run: x\n    shell: bash\n",
		"no run":        "verify:\n  - name: x\n",
		"bad timeout":   "verify:\n  - run: x\n    timeout: soon\n",
		"timeout 0":     "verify:\n  - run: x\n    timeout: 0s\n",
		"timeout 25h":   "verify:\n  - run: x\n    timeout: 25h\n",
		"21 commands":   twentyOne.String(),
		"not a mapping": "- run: x\n",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := planChecks(writeFiles(t, map[string]string{ConfigFile: body}), testPolicy())
			if ErrorCode(err) != EInvalid {
				t.Fatalf("got %v, want an invalid-configuration error", err)
			}
		})
	}
	got, err := planChecks(writeFiles(t, map[string]string{ConfigFile: twenty.String()}), testPolicy())
	if err != nil || len(got) != 20 {
		t.Fatalf("20 commands: got %d, %v", len(got), err)
	}
	p := testPolicy()
	p.CommandTimeout = Duration(time.Second)
	got, err = planChecks(writeFiles(t, map[string]string{ConfigFile: "verify:\n  - run: x\n    timeout: 1s\n  - run: y\n    timeout: 24h\n"}), p)
	if err != nil || len(got) != 2 {
		t.Fatalf("bounds: %v", err)
	}
}

func TestRunCheckTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	c := PlannedCheck{Name: "slow", Command: shell("sleep 600 & echo $! > " + pidFile + "; echo started; wait"), TimeoutMS: 3000} // room to start the shell and write the pid file on a loaded -race run
	res, err := runCheck(t.Context(), dir, filepath.Join(dir, "log"), os.Environ(), c, 1)
	is.NoErr(err)
	is.True(res.TimedOut)
	is.True(!res.Passed())
	is.True(strings.HasPrefix(res.Output, "started\n"))
	is.True(strings.Contains(res.Output, "timeout"))
	pid := readPid(pidFile)
	is.True(pid > 0)
	deadline := time.Now().Add(15 * time.Second) // free when it passes; room for a loaded run
	for time.Now().Before(deadline) && alive(pid) {
		time.Sleep(20 * time.Millisecond)
	}
	is.True(!alive(pid))
}

func TestRunCheckOutputTail(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := t.TempDir()
	c := PlannedCheck{Name: "loud", Command: shell("yes 0123456789 | head -c 100000; echo END; exit 7"), TimeoutMS: 10000}
	res, err := runCheck(t.Context(), dir, filepath.Join(dir, "log"), os.Environ(), c, 1)
	is.NoErr(err)
	is.Equal(res.ExitCode, 7)
	is.True(res.Truncated)
	is.Equal(len(res.Output), outputLimit)
	is.True(strings.HasSuffix(res.Output, "END\n"))
	st, err := os.Stat(filepath.Join(dir, "log"))
	is.NoErr(err)
	is.Equal(st.Size(), int64(100004)) // the whole output stays in the log
	// A command that cannot start fails without an error of the runner.
	res, err = runCheck(t.Context(), dir, filepath.Join(dir, "log2"), os.Environ(), PlannedCheck{Name: "x", Command: []string{"/nonexistent/tool"}, TimeoutMS: 1000}, 2)
	is.NoErr(err)
	is.Equal(res.ExitCode, -1)
	is.True(strings.Contains(res.Output, "could not start"))
}
