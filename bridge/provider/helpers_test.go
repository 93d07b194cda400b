package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/bridge/bridge/provider/providertest"
)

// recorder collects events and fails the test if emit is ever called
// concurrently or after Run returned.
type recorder struct {
	t        testing.TB
	inFlight atomic.Int32
	done     atomic.Bool
	mu       sync.Mutex
	evs      []Event
	onEvent  func(Event)
}

func newRecorder(t testing.TB) *recorder { return &recorder{t: t} }

func (r *recorder) emit(ev Event) {
	if !r.inFlight.CompareAndSwap(0, 1) {
		r.t.Errorf("emit called concurrently (event %s)", ev.Kind)
	}
	defer r.inFlight.Store(0)
	if r.done.Load() {
		r.t.Errorf("emit called after Run returned (event %s %q)", ev.Kind, ev.Text)
	}
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
	if r.onEvent != nil {
		r.onEvent(ev)
	}
}

// finish marks Run as returned.
func (r *recorder) finish() { r.done.Store(true) }

func (r *recorder) events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.evs...)
}

func kindsOf(evs []Event) []EventKind {
	out := make([]EventKind, 0, len(evs))
	for _, ev := range evs {
		out = append(out, ev.Kind)
	}
	return out
}

// withoutLogs drops stderr log events, whose interleaving with stdout
// events is not deterministic.
func withoutLogs(evs []Event) []Event {
	var out []Event
	for _, ev := range evs {
		if ev.Kind != EventLog {
			out = append(out, ev)
		}
	}
	return out
}

func ofKind(evs []Event, k EventKind) []Event {
	var out []Event
	for _, ev := range evs {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

func transcriptPath(dialect, name string) string {
	return filepath.Join("testdata", "fakeagent", "transcripts", dialect, name+".jsonl")
}

// parseFile feeds a transcript through a parser line by line.
func parseFile(t *testing.T, p lineParser, path string) []Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	var evs []Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		evs = append(evs, p.parseLine(append([]byte(nil), sc.Bytes()...), now)...)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

var (
	fakeOnce              sync.Once
	fakeDir               string
	fakeClaude, fakeCodex string
)

// fakeAgents returns the fake claude and codex executables, built once.
func fakeAgents(t testing.TB) (claude, codex string) {
	t.Helper()
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "provider-fake-")
		if err != nil {
			t.Fatal(err)
		}
		fakeDir = dir
		fakeClaude, fakeCodex = providertest.BuildFakeAgent(t, dir)
	})
	if fakeClaude == "" {
		t.Fatal("fake agent unavailable (earlier build failed)")
	}
	return fakeClaude, fakeCodex
}

func TestMain(m *testing.M) {
	code := providertest.RunGuarded(m)
	if fakeDir != "" {
		_ = os.RemoveAll(fakeDir)
	}
	os.Exit(code)
}

// testConfig keeps the kill grace short so failure paths stay fast. The
// exit grace is long: an agent descheduled between its result and its exit
// would otherwise be terminated and change the exit code the tests assert
// (TestRunLingeringAgentIsStoppedAfterResult sets its own).
func testConfig(path string) Config {
	return Config{Path: path, KillGrace: 300 * time.Millisecond, ExitGrace: 5 * time.Second}
}

func mustValidRaw(t *testing.T, evs []Event) {
	t.Helper()
	for i, ev := range evs {
		if ev.Raw != nil && !json.Valid(ev.Raw) {
			t.Errorf("event %d (%s): Raw is not valid JSON: %.80q", i, ev.Kind, ev.Raw)
		}
		if ev.Time.IsZero() {
			t.Errorf("event %d (%s): zero Time", i, ev.Kind)
		}
	}
}
