// Package providertest builds the fake agent CLI used by tests of the
// provider package and of everything above it (bridge end-to-end tests,
// benchmarks). Import it from _test.go files only.
//
// The fake agent (bridge/provider/testdata/fakeagent) impersonates Claude
// Code or Codex depending on the name it is invoked under, and is driven by
// directives in the prompt: #transcript:NAME (plain, tools, error; claude
// also subagent, rate-limit and retries, codex also unauthorized), #recorded:NAME
// (output captured from the real CLIs without credentials or network,
// transcripts/recorded), #echo (default), #pwd, #env:NAME, #args, #slow:MS,
// #big:N, #malformed, #crash, #hang, #ignore-term, #linger and (command
// mode) #exit:N. A whitespace-only prompt gets what the real CLI does with
// one. See its package comment for details.
package providertest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	builtPath string
	buildErr  error
)

// FakeAgent returns the path of the fake agent binary, building it once per
// test process. Invoked under its own name ("fakeagent") it acts as a plain
// command: prompt on stdin, answer on stdout.
func FakeAgent(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() { builtPath, buildErr = build() })
	if buildErr != nil {
		tb.Fatalf("providertest: build fake agent: %v", buildErr)
	}
	return builtPath
}

// BuildFakeAgent places copies of the fake agent named claude and codex
// (with ".exe" on Windows) in dir and returns their paths. Put dir first on
// PATH, or pass the paths to the providers' Config.Path.
func BuildFakeAgent(tb testing.TB, dir string) (claudePath, codexPath string) {
	tb.Helper()
	bin := FakeAgent(tb)
	claudePath = filepath.Join(dir, "claude"+exeSuffix())
	codexPath = filepath.Join(dir, "codex"+exeSuffix())
	for _, p := range []string{claudePath, codexPath} {
		if err := linkOrCopy(bin, p); err != nil {
			tb.Fatalf("providertest: %v", err)
		}
	}
	return claudePath, codexPath
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

// sourceDir locates testdata/fakeagent relative to this file, so the
// builder works from any package's tests within the module.
func sourceDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate providertest source")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "testdata", "fakeagent")
	if _, err := os.Stat(filepath.Join(dir, "main.go")); err != nil {
		return "", fmt.Errorf("fake agent source not found (built with -trimpath?): %w", err)
	}
	return dir, nil
}

// build compiles the fake agent into a cache directory keyed by a hash of
// its sources and the toolchain, so parallel test processes share one
// binary and stale binaries are never reused.
func build() (string, error) {
	src, err := sourceDir()
	if err != nil {
		return "", err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go toolchain not on PATH: %w", err)
	}
	key, err := hashSources(src)
	if err != nil {
		return "", err
	}
	cacheDir := filepath.Join(os.TempDir(), "agentbridge-fakeagent-"+key)
	out := filepath.Join(cacheDir, "fakeagent"+exeSuffix())
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("create cache dir: %w", err)
	}
	tmp, err := os.CreateTemp(cacheDir, "build-*"+exeSuffix())
	if err != nil {
		return "", fmt.Errorf("create temp binary: %w", err)
	}
	_ = tmp.Close()
	cmd := exec.Command(goBin, "build", "-o", tmp.Name(), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if output, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("go build: %w\n%s", err, output)
	}
	// Rename is atomic: a concurrent builder either sees no binary or a
	// complete one.
	if err := os.Rename(tmp.Name(), out); err != nil {
		_ = os.Remove(tmp.Name())
		if _, statErr := os.Stat(out); statErr == nil {
			return out, nil // another process won the race
		}
		return "", fmt.Errorf("install binary: %w", err)
	}
	return out, nil
}

func hashSources(dir string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash fake agent sources: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("hash fake agent sources: %w", err)
		}
		rel, _ := filepath.Rel(dir, f)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// linkOrCopy makes dst run bin under dst's name: a symlink where possible
// (argv[0] keeps the link name), a copy otherwise.
func linkOrCopy(bin, dst string) error {
	_ = os.Remove(dst)
	if runtime.GOOS != "windows" {
		if err := os.Symlink(bin, dst); err == nil {
			return nil
		}
	}
	in, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("copy fake agent: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("copy fake agent: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy fake agent: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy fake agent: %w", err)
	}
	return nil
}
