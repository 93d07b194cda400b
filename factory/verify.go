package factory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// PlannedCheck is a verification command frozen in the plan before the agent
// runs, so the agent cannot change what judges its work.
type PlannedCheck struct {
	Name      string   `json:"name"`
	Command   []string `json:"command"`
	Source    string   `json:"source"` // request, .factory.yaml, go, node, python, rust, make
	TimeoutMS int64    `json:"timeout_ms"`
}

// ConfigFile is the repository file that names the verification commands.
const ConfigFile = ".factory.yaml"

// factoryYAML is the format of .factory.yaml (docs/factory-api.md).
type factoryYAML struct {
	Verify []struct {
		Name    string `yaml:"name"`
		Run     string `yaml:"run"`
		Timeout string `yaml:"timeout"`
	} `yaml:"verify"`
}

// shell returns the argument vector running line through the shell.
func shell(line string) []string {
	if runtime.GOOS == "windows" {
		return []string{"cmd", "/C", line}
	}
	return []string{"sh", "-c", line}
}

// planChecks decides the verification commands of a run in dir (the
// project directory of the fresh clone): the request's commands, else
// .factory.yaml, else the checks detected for Go, Node, Python, Rust and
// Make. An empty result means no executable verification: the run fails.
func planChecks(dir string, p Policy) ([]PlannedCheck, error) {
	def := time.Duration(p.CommandTimeout).Milliseconds()
	var out []PlannedCheck
	switch {
	case len(p.Verify) > 0:
		for _, line := range p.Verify {
			out = append(out, PlannedCheck{Name: line, Command: shell(line), Source: "request", TimeoutMS: def})
		}
	default:
		fromFile, found, err := readFactoryYAML(dir, def)
		if err != nil {
			return nil, err
		}
		if found {
			out = fromFile
		} else {
			out = detectChecks(dir, def)
		}
	}
	if len(out) > p.MaxCommands {
		return nil, &Error{Code: EInvalid, Message: fmt.Sprintf("%d verification commands; at most %d are run per run", len(out), p.MaxCommands)}
	}
	return out, nil
}

func readFactoryYAML(dir string, def int64) ([]PlannedCheck, bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var f factoryYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, true, &Error{Code: EInvalid, Message: ConfigFile + ": " + err.Error()}
	}
	var out []PlannedCheck
	for i, v := range f.Verify {
		if strings.TrimSpace(v.Run) == "" {
			return nil, true, &Error{Code: EInvalid, Message: fmt.Sprintf("%s: verify[%d].run is required", ConfigFile, i)}
		}
		c := PlannedCheck{Name: v.Name, Command: shell(v.Run), Source: ConfigFile, TimeoutMS: def}
		if c.Name == "" {
			c.Name = v.Run
		}
		if v.Timeout != "" {
			d, err := time.ParseDuration(v.Timeout)
			if err != nil || d < time.Second || d > 24*time.Hour {
				return nil, true, &Error{Code: EInvalid, Message: fmt.Sprintf("%s: verify[%d].timeout must be a duration from 1s to 24h, got %q", ConfigFile, i, v.Timeout)}
			}
			c.TimeoutMS = d.Milliseconds()
		}
		out = append(out, c)
	}
	return out, true, nil
}

// npmDefaultTest is what `npm init` writes as the test script: not a check.
const npmDefaultTest = `echo "Error: no test specified" && exit 1`

var makeTarget = regexp.MustCompile(`(?m)^(test|check)\s*:`)

// detectChecks looks for the project's own checks in dir.
func detectChecks(dir string, timeoutMS int64) []PlannedCheck {
	has := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	var out []PlannedCheck
	add := func(source string, argv ...string) {
		out = append(out, PlannedCheck{Name: strings.Join(argv, " "), Command: argv, Source: source, TimeoutMS: timeoutMS})
	}
	for _, mf := range []string{"GNUmakefile", "makefile", "Makefile"} {
		data, err := os.ReadFile(filepath.Join(dir, mf))
		if err != nil {
			continue
		}
		for _, m := range makeTarget.FindAllStringSubmatch(string(data), -1) {
			add("make", "make", m[1])
		}
		break
	}
	if has("go.mod") {
		add("go", "go", "vet", "./...")
		add("go", "go", "test", "./...")
	}
	if data, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
		var pkg struct {
			Scripts map[string]string `json:"scripts"`
		}
		if json.Unmarshal(data, &pkg) == nil {
			for _, s := range []string{"lint", "build", "test"} {
				if body, ok := pkg.Scripts[s]; ok && strings.TrimSpace(body) != "" && body != npmDefaultTest {
					add("node", "npm", "run", s)
				}
			}
		}
	}
	if has("pyproject.toml") || has("setup.py") || has("pytest.ini") || has("tox.ini") || has("setup.cfg") {
		add("python", "python3", "-m", "pytest", "-q")
	}
	if has("Cargo.toml") {
		add("rust", "cargo", "test")
	}
	return dedupe(out)
}

// dedupe drops repeated commands (a Makefile listing test twice).
func dedupe(in []PlannedCheck) []PlannedCheck {
	seen := map[string]bool{}
	var out []PlannedCheck
	for _, c := range in {
		k := strings.Join(c.Command, "\x00")
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out
}

// outputLimit bounds the output kept with a check in the database (its
// end, where failures are reported); the whole output stays in the run's
// logs directory.
const outputLimit = 64 << 10

// killGrace is how long a command's process group gets between SIGTERM
// and SIGKILL when cancelled or timed out.
const killGrace = 2 * time.Second

// runCheck runs one command in dir in its own process group with its own
// timeout; output (stdout and stderr together) goes to logPath. When ctx
// is cancelled the group is terminated and err is ctx's error.
func runCheck(ctx context.Context, dir, logPath string, env []string, c PlannedCheck, idx int) (Check, error) {
	res := Check{Index: idx, Name: c.Name, Command: c.Command, Source: c.Source, TimeoutMS: c.TimeoutMS, StartedAt: time.Now().UTC().Truncate(time.Millisecond)}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return res, err
	}
	defer logf.Close()
	cmd := exec.Command(c.Command[0], c.Command[1:]...)
	cmd.Dir, cmd.Env = dir, env
	// A file, not a pipe: Wait returns when the command exits even if
	// something it spawned still holds the output open.
	cmd.Stdout, cmd.Stderr = logf, logf
	setGroup(cmd)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.ExitCode = -1
		res.Output = fmt.Sprintf("could not start %q: %v", c.Command[0], err)
		res.DurationMS = time.Since(start).Milliseconds()
		return res, nil
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(time.Duration(c.TimeoutMS) * time.Millisecond)
	defer timer.Stop()
	var waitErr, ctxErr error
	stop := func() {
		terminateGroup(pid)
		select {
		case waitErr = <-done:
		case <-time.After(killGrace):
			killGroup(pid)
			waitErr = <-done
		}
	}
	select {
	case waitErr = <-done:
	case <-timer.C:
		res.TimedOut = true
		stop()
	case <-ctx.Done():
		ctxErr = ctx.Err()
		stop()
	}
	// Whatever the command left behind in its group goes with it.
	killGroup(pid)
	res.DurationMS = time.Since(start).Milliseconds()
	res.ExitCode = exitCode(cmd, waitErr)
	res.Output, res.Truncated = tail(logPath, outputLimit)
	if res.TimedOut {
		res.Output += fmt.Sprintf("\n[factory: stopped after the %s timeout]", time.Duration(c.TimeoutMS)*time.Millisecond)
	}
	return res, ctxErr
}

func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState != nil {
		if code := cmd.ProcessState.ExitCode(); code >= 0 {
			return code
		}
		return -1
	}
	if err != nil {
		return -1
	}
	return 0
}

// tail reads the last limit bytes of a file.
func tail(path string, limit int64) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", false
	}
	truncated := st.Size() > limit
	if truncated {
		_, _ = f.Seek(st.Size()-limit, io.SeekStart)
	}
	data, _ := io.ReadAll(io.LimitReader(f, limit))
	return strings.ToValidUTF8(string(data), "\uFFFD"), truncated
}
