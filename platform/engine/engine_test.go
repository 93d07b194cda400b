package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/kernel"
)

func TestRedact(t *testing.T) {
	is := is.New(t)
	raw := json.RawMessage(`{"a":{"key":"s3cret","keep":1},"list":[{"token":"t1"},{"token":"t2"}],"x~/y":"z"}`)
	got := redact(raw, []string{"/a/key", "/list/*/token", "/x~0~1y"})
	is.Equal(string(got), `{"a":{"keep":1,"key":"[redacted]"},"list":[{"token":"[redacted]"},{"token":"[redacted]"}],"x~/y":"[redacted]"}`)
	is.Equal(string(redact(raw, nil)), string(raw))
	is.Equal(string(redact(raw, []string{""})), `"[redacted]"`)
	is.Equal(string(redact(json.RawMessage(`{broken`), []string{"/a"})), `"[redacted]"`)
	// Numbers keep their text (no float64 round trip).
	is.Equal(string(redact(json.RawMessage(`{"id":9007199254740993,"f":1.50,"k":"s"}`), []string{"/k"})),
		`{"f":1.50,"id":9007199254740993,"k":"[redacted]"}`)
}

func TestCheckStart(t *testing.T) {
	is := is.New(t)
	id := "0190a0b0-0000-7000-8000-000000000001"
	in, err := checkStart(&StartRequest{ActivationID: id})
	is.NoErr(err)
	is.Equal(string(in), "{}")
	in, err = checkStart(&StartRequest{ActivationID: id, Input: json.RawMessage(` {"a":1} `)})
	is.NoErr(err)
	is.Equal(string(in), `{"a":1}`)
	for _, req := range []StartRequest{
		{ActivationID: "nope"},
		{ActivationID: id, Input: json.RawMessage(`[1]`)},
		{ActivationID: id, CorrelationKey: strings.Repeat("k", MaxKeyLen+1)},
		{ActivationID: id, BusinessKey: strings.Repeat("k", MaxKeyLen+1)},
	} {
		_, err := checkStart(&req)
		is.True(err != nil)
	}
	_, err = checkStart(&StartRequest{ActivationID: id, CorrelationKey: strings.Repeat("k", MaxKeyLen)})
	is.NoErr(err)
}

func TestMergeDefaults(t *testing.T) {
	is := is.New(t)
	out, err := mergeDefaults(json.RawMessage(`{"a":1}`), map[string]json.RawMessage{"a": json.RawMessage(`2`), "b": json.RawMessage(`3`)})
	is.NoErr(err)
	is.Equal(string(out), `{"a":1,"b":3}`)
}

func TestInlineTask(t *testing.T) {
	is := is.New(t)
	p := &program{adapters: map[string]string{"acme/echo@1": adapterEcho, "acme/noop@1": adapterNoop, "acme/http@1": "http"}}
	st := kernel.State{Tasks: map[string]*kernel.Task{
		"b": {ID: "b", Executor: kernel.ExecutorConnector, Ref: "acme/echo@1", Status: kernel.TaskRunning, Input: json.RawMessage(`{"x":1}`)},
		"c": {ID: "c", Executor: kernel.ExecutorConnector, Ref: "acme/noop@1", Status: kernel.TaskRunning},
		"a": {ID: "a", Executor: kernel.ExecutorConnector, Ref: "acme/http@1", Status: kernel.TaskRunning},
		"0": {ID: "0", Executor: kernel.ExecutorConnector, Ref: "acme/echo@1", Status: kernel.TaskBackoff},
	}}
	id, out, ok := p.inlineTask(&st)
	is.True(ok)
	is.Equal(id, "b")
	is.Equal(string(out), `{"x":1}`)
	delete(st.Tasks, "b")
	id, out, ok = p.inlineTask(&st)
	is.True(ok)
	is.Equal(id, "c")
	is.Equal(string(out), `{}`)
	delete(st.Tasks, "c")
	_, _, ok = p.inlineTask(&st)
	is.True(!ok)
}

func TestMigrations(t *testing.T) {
	is := is.New(t)
	m := Migrations()
	var versions []int
	for _, x := range m {
		versions = append(versions, x.Version)
	}
	is.Equal(versions, []int{6, 10, 12, 13, 14, 17, 25, 26, 32, 33, 35, 37, 38})
}

// An agent tool call's input and its task's output are redacted with the
// tool's pinned schema pointers, in history events and in what the job's
// audit keeps.
func TestRedactAgentToolCall(t *testing.T) {
	is := is.New(t)
	sec := secretsOf(kernel.Secrets{ToolInputs: map[string][]string{"t/vault@1": {"/apiKey"}},
		ToolOutputs: map[string][]string{"t/vault@1": {"/token"}}})
	is.True(!sec.none)
	event := func(e kernel.Event) string {
		raw, err := json.Marshal(e)
		is.NoErr(err)
		out, err := sec.event(raw)
		is.NoErr(err)
		return string(out)
	}
	called := event(kernel.Event{Kind: kernel.EventAgentToolCalled, TaskID: "a", CallID: "c1", Tool: "t/vault@1",
		Input: json.RawMessage(`{"apiKey":"sk-1","id":"c-7"}`)})
	is.True(strings.Contains(called, `"apiKey":"[redacted]"`))
	is.True(strings.Contains(called, `"id":"c-7"`))
	is.True(!strings.Contains(called, "sk-1"))
	// Another tool's input keeps its values.
	other := event(kernel.Event{Kind: kernel.EventAgentToolCalled, TaskID: "a", CallID: "c2", Tool: "t/fetch@1",
		Input: json.RawMessage(`{"apiKey":"plain"}`)})
	is.True(strings.Contains(other, `"apiKey":"plain"`))
	done := event(kernel.Event{Kind: kernel.EventTaskCompleted, TaskID: "t", Output: json.RawMessage(`{"name":"Ada","token":"tok-1"}`)})
	is.True(strings.Contains(done, `"token":"[redacted]"`))
	is.True(strings.Contains(done, `"name":"Ada"`))

	in, out := sec.toolCall("t/vault@1", json.RawMessage(`{"apiKey":"sk-1","id":"c-7"}`), json.RawMessage(`{"token":"tok-1"}`))
	is.Equal(string(in), `{"apiKey":"[redacted]","id":"c-7"}`)
	is.Equal(string(out), `{"token":"[redacted]"}`)
}

// TestOwnRowOnlyIncidents: an event that opens or resolves an incident
// is not performed through a cursor's pending rows: the incident index
// (platform_run_incidents) refers to the run's row, which a new run's
// cursor inserts only at flush, so the cursor flushes first. No start
// transaction opens an incident today (the kernel opens them on task
// failures and timers, never on started or an inline echo/noop), so this
// ordering is guarded here rather than over HTTP.
func TestOwnRowOnlyIncidents(t *testing.T) {
	is := is.New(t)
	p := &program{adapters: map[string]string{"acme/echo@1": adapterEcho}}
	own := []kernel.Effect{{Kind: kernel.EffectRecord}, {Kind: kernel.EffectContinue}, {Kind: kernel.EffectRunCompleted},
		{Kind: kernel.EffectStartTask, Task: &kernel.TaskSpec{Executor: kernel.ExecutorConnector, Ref: "acme/echo@1"}}}
	is.True(ownRowOnly(p, own))
	for _, k := range []kernel.EffectKind{kernel.EffectOpenIncident, kernel.EffectResolveIncident} {
		is.True(!ownRowOnly(p, append(own[:len(own):len(own)], kernel.Effect{Kind: k, Incident: &kernel.Incident{ID: "i"}})))
	}
}
