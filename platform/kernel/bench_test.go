package kernel

import (
	"encoding/json"
	"testing"
	"time"
)

// threeStepWF calls the built-in http connector three times (t/fetch@1 is
// bound to the http adapter), each step using the previous one's output.
const threeStepWF = `kind: workflow
id: bench/three
input: {type: object, properties: {id: {type: string}}}
steps:
  - id: one
    action: t/fetch@1
    with: {id: =input.id}
  - id: two
    action: t/fetch@1
    with: {id: =steps.one.output.name}
  - id: three
    action: t/fetch@1
    with: {id: =steps.two.output.name + "-" + string(steps.one.output.count)}
result: {name: =steps.three.output.name, total: =steps.one.output.count + steps.two.output.count}
`

// BenchmarkThreeStepRun drives the 3-step workflow from started to
// succeeded: 4 accepted events (started and three task completions), each
// a Step with its state copy, expression evaluations, schema checks and
// effects. The program is compiled and loaded once.
func BenchmarkThreeStepRun(b *testing.B) {
	p := load(b, threeStepWF)
	input := json.RawMessage(`{"id":"a"}`)
	output := json.RawMessage(`{"name":"n","count":2}`)
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	transitions := 0
	b.ResetTimer()
	for b.Loop() {
		s, eff, err := Step(p, State{}, Event{Seq: 1, At: at, Kind: EventStarted, RunID: "run-1", Input: input})
		transitions++
		for err == nil && !s.Status.Terminal() {
			var task string
			for _, e := range eff {
				if e.Kind == EffectStartTask {
					task = e.Task.TaskID
				}
			}
			s, eff, err = Step(p, s, Event{Seq: s.Seq + 1, At: at, Kind: EventTaskCompleted, TaskID: task, Output: output})
			transitions++
		}
		if err != nil || s.Status != StatusSucceeded {
			b.Fatalf("run ended %s: %v", s.Status, err)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/sec, "runs/s")
	b.ReportMetric(float64(transitions)/sec, "transitions/s")
}
