package kernel

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestActionStep(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/action
input:
  type: object
  properties:
    id: {type: string}
steps:
  - id: fetch
    action: t/fetch@1
    with: {id: =input.id}
  - id: keyed
    action: t/keyed@1
    idempotencyKey: ="k-" + input.id
    with: {n: =steps.fetch.output.count + 1, s: =steps.fetch.output.score + 0.5}
result:
  id: =steps.keyed.output.id
`)
	d := newDriver(t, p)
	eff := d.start(`{"id":"a"}`)
	is.Equal(kinds(eff), "start_timer,start_task")
	spec := effectsOf(eff, EffectStartTask)[0].Task
	is.Equal(spec.Executor, ExecutorConnector)
	is.Equal(string(spec.Input), `{"id":"a"}`)
	is.Equal(spec.SideEffect, "read_only")
	is.Equal(spec.IdempotencyKey, spec.OperationKey) // default idempotency key
	is.Equal(*spec.Deadline, t0.Add(10*time.Second))
	is.Equal(d.s.Status, StatusRunning)

	// count is an integer position, score a number position: 3 + 1 is an
	// int, 2 + 0.5 a double.
	eff = d.complete("fetch", `{"count": 3, "score": 2}`)
	spec = effectsOf(eff, EffectStartTask)[0].Task
	is.Equal(string(spec.Input), `{"n":4,"s":2.5}`)
	is.Equal(spec.IdempotencyKey, "k-a")
	is.Equal(spec.Executor, ExecutorWorker)
	is.True(spec.IdempotencyKey != spec.OperationKey)

	d.complete("keyed", `{"id":"x1"}`)
	is.Equal(d.s.Status, StatusSucceeded)
	is.Equal(string(d.s.Output), `{"id":"x1"}`)
}

func TestTaskOutputValidatedAgainstPinnedSchema(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/pinned
steps:
  - id: charge
    action: t/charge@1
`)
	d := newDriver(t, p)
	d.start(`{}`)
	err := d.try(Event{Kind: EventTaskCompleted, TaskID: d.task("charge").ID, Output: json.RawMessage(`{"other":1}`)})
	is.Equal(ErrorCode(err), CodeValidation) // chargeId is required by the pinned schema
	err = d.try(Event{Kind: EventTaskCompleted, TaskID: d.task("charge").ID, Output: json.RawMessage(`{"chargeId":`)})
	is.Equal(ErrorCode(err), CodeValidation)
	d.complete("charge", `{"chargeId":"c1"}`)
	is.Equal(d.s.Status, StatusSucceeded)
}

func TestDecisionStep(t *testing.T) {
	for _, tc := range []struct {
		name, weight, want string
	}{
		{"heavy", "12", "20.0"},
		{"light", "3.5", "5.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			p := load(t, `kind: workflow
id: t/decision
input:
  type: object
  properties:
    weight: {type: number}
steps:
  - id: fee
    decision: t/fee@1
    with: {weight: =input.weight}
  - id: inline
    decision:
      hitPolicy: FIRST
      inputs: [{name: fee, type: number}]
      outputs: [{name: level, type: string}]
      rules:
        - when: ["> 10"]
          then: [high]
        - when: ["-"]
          then: [low]
    with: {fee: =steps.fee.output}
result:
  fee: =steps.fee.output
  level: =steps.inline.output
`)
			d := newDriver(t, p)
			d.start(`{"weight":` + tc.weight + `}`)
			is.Equal(d.s.Status, StatusSucceeded)
			var out struct {
				Fee   json.Number
				Level string
			}
			is.NoErr(json.Unmarshal(d.s.Output, &out))
			is.Equal(string(out.Fee), tc.want)
			is.Equal(outputOf(t, d.s, "fee"), tc.want)
		})
	}
}

func TestDecisionFailureFailsRun(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/decision-fail
input: {type: object, properties: {w: {}}}
steps:
  - id: uniq
    decision:
      inputs: [{name: w, type: number}]
      outputs: [{name: o, type: string}]
      rules:
        - when: ["> 1"]
          then: [a]
        - when: ["> 2"]
          then: [b]
    with: {w: =input.w}
`)
	d := newDriver(t, p)
	d.start(`{"w": 5}`) // both rules match a UNIQUE table
	is.Equal(d.s.Status, StatusFailed)
	is.Equal(d.s.Error.Code, ErrCodeDecision)
	is.Equal(d.s.Error.Node, "uniq")
}

func TestWaitStep(t *testing.T) {
	for _, tc := range []struct {
		name, wait, input string
		want              time.Duration
	}{
		{"literal", "90s", `{}`, 90 * time.Second},
		{"iso", "PT1M", `{}`, time.Minute},
		{"duration expression", "=duration('1h') + duration('30m')", `{}`, 90 * time.Minute},
		{"string expression", "=input.d", `{"d":"2m"}`, 2 * time.Minute},
		{"zero expression", "=duration('0s')", `{}`, 0},
		{"negative expression", "=duration('-5s')", `{}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			p := load(t, `kind: workflow
id: t/wait
input: {type: object, properties: {d: {type: string}}}
steps:
  - id: pause
    wait: "`+tc.wait+`"
`)
			d := newDriver(t, p)
			d.start(tc.input)
			if tc.want == 0 {
				is.Equal(d.s.Status, StatusSucceeded)
				is.Equal(len(records(d.effects, RecordWaitElapsed)), 1)
				return
			}
			is.Equal(d.s.Status, StatusWaiting)
			tm, ok := NextDue(d.s)
			is.True(ok)
			is.Equal(tm.Kind, TimerWait)
			is.Equal(tm.Due, t0.Add(tc.want))
			// One millisecond early is refused; at the due time it elapses.
			d.now = tm.Due.Add(-time.Millisecond)
			err := d.try(Event{Kind: EventTimerFired, TimerID: tm.ID})
			is.Equal(ErrorCode(err), CodeRuntimeState)
			d.now = tm.Due.Add(3 * time.Second)
			eff := d.must(Event{Kind: EventTimerFired, TimerID: tm.ID, ID: "ev-9"})
			rec := records(eff, RecordWaitElapsed)
			is.Equal(len(rec), 1)
			is.Equal(rec[0].NodeID, "pause")
			is.Equal(*rec[0].Deadline, tm.Due)
			is.Equal(rec[0].WaitID, tm.ID)
			is.Equal(rec[0].ObservedAt, tm.Due.Add(3*time.Second))
			is.Equal(rec[0].EventID, "ev-9")
			is.Equal(rec[0].Seq, int64(2))
			is.Equal(d.s.Status, StatusSucceeded)
			// The timer is gone: firing it again is stale.
			err = d.try(Event{Kind: EventTimerFired, TimerID: tm.ID})
			is.Equal(ErrorCode(err), CodeRuntimeState)
		})
	}
}

func TestWaitInvalidDurationFailsRun(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/wait-bad
input: {type: object, properties: {d: {type: string}}}
steps:
  - id: pause
    wait: =input.d
`)
	d := newDriver(t, p)
	d.start(`{"d":"soon"}`)
	is.Equal(d.s.Status, StatusFailed)
	is.Equal(d.s.Error.Code, ErrCodeWaitInvalid)
}

const signalWF = `kind: workflow
id: t/signal
steps:
  - id: approval
    signal: order.approved
    schema:
      type: object
      required: [by]
      properties:
        by: {type: string}
        level: {type: integer}
    deadline: 1h
    onTimeout: late
  - id: ok
    succeed:
      result: {by: =steps.approval.output.by, next: =steps.approval.output.level + 1}
  - id: late
    succeed:
      result: {late: true}
`

func TestSignalStep(t *testing.T) {
	t.Run("received before the deadline", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, signalWF))
		d.start(`{}`)
		is.Equal(d.s.Status, StatusWaiting)
		d.now = t0.Add(time.Hour - time.Millisecond)
		eff := d.must(Event{Kind: EventSignalReceived, Signal: "order.approved", Payload: json.RawMessage(`{"by":"ann","level":2}`)})
		rec := records(eff, RecordSignalReceived)
		is.Equal(len(rec), 1)
		is.Equal(*rec[0].Deadline, t0.Add(time.Hour)) // the issued deadline
		is.Equal(rec[0].ObservedAt, d.now)            // acceptance time
		is.Equal(d.s.Status, StatusSucceeded)
		is.Equal(string(d.s.Output), `{"by":"ann","next":3}`)
	})
	t.Run("buffered before the step", func(t *testing.T) {
		is := is.New(t)
		p := load(t, `kind: workflow
id: t/signal-buffer
steps:
  - id: first
    wait: 10s
  - id: sig
    signal: go
    schema: {type: object, properties: {n: {type: integer}}}
result: {n: =steps.sig.output.n}
`)
		d := newDriver(t, p)
		d.start(`{}`)
		eff := d.must(Event{Kind: EventSignalReceived, Signal: "go", Payload: json.RawMessage(`{"n":7}`)})
		is.Equal(len(records(eff, RecordSignalBuffered)), 1)
		is.Equal(len(d.s.Signals), 1)
		d.fireNext()
		is.Equal(d.s.Status, StatusSucceeded)
		is.Equal(string(d.s.Output), `{"n":7}`)
		is.Equal(len(d.s.Signals), 0)
	})
	t.Run("refusals", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, signalWF))
		d.start(`{}`)
		err := d.try(Event{Kind: EventSignalReceived, Signal: "unknown", Payload: json.RawMessage(`{}`)})
		is.Equal(ErrorCode(err), CodeValidation)
		err = d.try(Event{Kind: EventSignalReceived, Signal: "order.approved", Payload: json.RawMessage(`{"level":1}`)})
		is.Equal(ErrorCode(err), CodeValidation) // by is required
		err = d.try(Event{Kind: EventSignalReceived, Signal: ""})
		is.Equal(ErrorCode(err), CodeValidation)
		is.Equal(d.s.Status, StatusWaiting)
	})
	t.Run("without onTimeout the run times out", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, `kind: workflow
id: t/signal-timeout
steps:
  - id: s
    signal: ping
    deadline: 5m
`))
		d.start(`{}`)
		eff := d.fireNext()
		is.Equal(d.s.Status, StatusTimedOut)
		is.Equal(d.s.Error.Code, ErrCodeStepTimeout)
		is.Equal(len(records(eff, RecordTimedOut)), 1)
		is.Equal(len(effectsOf(eff, EffectRunCompleted)), 1)
		err := d.try(Event{Kind: EventSignalReceived, Signal: "ping"})
		is.Equal(ErrorCode(err), CodeRuntimeState) // signal after the run ended
	})
}

func TestSignalExactlyAtDeadlineIsTooLate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		at     time.Duration
		output string
	}{
		{"one millisecond before wins", time.Hour - time.Millisecond, `{"by":"ann","next":1}`},
		{"exactly at the deadline is too late", time.Hour, `{"late":true}`},
		{"after the deadline is too late", time.Hour + time.Second, `{"late":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			d := newDriver(t, load(t, signalWF))
			d.start(`{}`)
			// The timer has not been fired by the scheduler: the signal's own
			// time decides.
			d.now = t0.Add(tc.at)
			d.must(Event{Kind: EventSignalReceived, Signal: "order.approved", Payload: json.RawMessage(`{"by":"ann","level":0}`)})
			is.Equal(d.s.Status, StatusSucceeded)
			is.Equal(string(d.s.Output), tc.output)
		})
	}
}

const humanWF = `kind: workflow
id: t/human
input: {type: object, properties: {order: {type: string}, who: {type: string}}}
steps:
  - id: review
    human:
      title: ="Review " + input.order
      description: Check it.
      assignees: ["group:finance", "=input.who"]
      form:
        type: object
        required: [comment]
        properties:
          comment: {type: string}
          amount: {type: integer}
      decisions: [approve, reject]
    deadline: 2d
    onTimeout: escalate
  - id: done
    succeed:
      result: {decision: =steps.review.output.decision, by: =steps.review.output.completedBy, amount: =steps.review.output.data.amount + 1}
  - id: escalate
    fail: {code: REVIEW_OVERDUE}
`

func TestHumanStep(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, humanWF))
	eff := d.start(`{"order":"o1","who":"user:bob"}`)
	opened := effectsOf(eff, EffectOpenHumanTask)
	is.Equal(len(opened), 1)
	h := opened[0].Human
	is.Equal(h.Title, "Review o1")
	is.Equal(h.Description, "Check it.")
	is.Equal(h.Assignees, []string{"group:finance", "user:bob"})
	is.Equal(h.Decisions, []string{"approve", "reject"})
	is.Equal(*h.Deadline, t0.Add(48*time.Hour))
	is.Equal(d.s.Status, StatusWaiting)

	err := d.try(Event{Kind: EventHumanCompleted, TaskID: h.ID, Decision: "maybe", Data: json.RawMessage(`{"comment":"x"}`)})
	is.Equal(ErrorCode(err), CodeValidation)
	err = d.try(Event{Kind: EventHumanCompleted, TaskID: h.ID, Decision: "approve", Data: json.RawMessage(`{}`)})
	is.Equal(ErrorCode(err), CodeValidation) // comment is required
	err = d.try(Event{Kind: EventHumanCompleted, TaskID: "nope", Decision: "approve"})
	is.Equal(ErrorCode(err), CodeRuntimeState)

	d.must(Event{Kind: EventHumanCompleted, TaskID: h.ID, Decision: "approve", CompletedBy: "user:bob",
		Data: json.RawMessage(`{"comment":"fine","amount":41}`)})
	is.Equal(d.s.Status, StatusSucceeded)
	is.Equal(string(d.s.Output), `{"amount":42,"by":"user:bob","decision":"approve"}`)
}

func TestHumanDeadlineTakesOnTimeout(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, humanWF))
	d.start(`{"order":"o1","who":"user:bob"}`)
	h := d.human("review")
	eff := d.fireNext()
	is.Equal(len(effectsOf(eff, EffectCloseHumanTask)), 1)
	is.Equal(d.s.Status, StatusFailed)
	is.Equal(d.s.Error.Code, "REVIEW_OVERDUE")
	err := d.try(Event{Kind: EventHumanCompleted, TaskID: h.ID, Decision: "approve"})
	is.Equal(ErrorCode(err), CodeRuntimeState)
}

func TestAgentStep(t *testing.T) {
	const src = `kind: workflow
id: t/agent
input: {type: object, properties: {ticket: {type: string}}}
steps:
  - id: triage
    agent:
      provider: claude
      model: sonnet
      instructions: Triage.
      prompt: '="Classify: " + input.ticket'
      tools: [t/fetch@1]
      output:
        type: object
        required: [category]
        properties:
          category: {type: string, enum: [billing, bug]}
          urgency: {type: integer}
      maxTurns: 4
    timeout: 5m
result: {category: =steps.triage.output.category, u: =steps.triage.output.urgency * 2}
`
	t.Run("completes", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, src))
		eff := d.start(`{"ticket":"card declined"}`)
		spec := effectsOf(eff, EffectStartTask)[0].Task
		is.Equal(spec.Executor, ExecutorAgent)
		is.Equal(spec.Agent.Provider, "claude")
		is.Equal(spec.Agent.Model, "sonnet")
		is.Equal(spec.Agent.Prompt, "Classify: card declined")
		is.Equal(spec.Agent.Tools, []string{"t/fetch@1"})
		is.Equal(spec.Agent.MaxTurns, 4)
		is.Equal(*spec.StepDeadline, t0.Add(5*time.Minute))
		is.Equal(kinds(eff), "start_timer,start_task") // only the step deadline timer
		err := d.try(Event{Kind: EventTaskCompleted, TaskID: spec.TaskID, Output: json.RawMessage(`{"category":"other"}`)})
		is.Equal(ErrorCode(err), CodeValidation)
		d.complete("triage", `{"category":"bug","urgency":3}`)
		is.Equal(string(d.s.Output), `{"category":"bug","u":6}`)
	})
	t.Run("timeout opens a deadline incident", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, src))
		d.start(`{"ticket":"x"}`)
		eff := d.fireNext()
		is.Equal(kinds(eff), "cancel_task,open_incident")
		inc := d.incident(IncidentTaskDeadline)
		is.True(!inc.RetrySafe)
		is.Equal(d.s.Status, StatusSuspended)
		is.Equal(ErrorCode(d.resolve(inc, ResolveRetrySafe, "", "")), CodeReconciliationRequired)
		is.NoErr(d.resolve(inc, ResolveAccept, `{"category":"billing","urgency":1}`, "ticket #4"))
		is.Equal(d.s.Status, StatusSucceeded)
		is.Equal(string(d.s.Output), `{"category":"billing","u":2}`)
	})
}

const childWF = `kind: workflow
id: t/parent
steps:
  - id: sub
    workflow: t/child@1
    with: {n: 21}
    timeout: 1h
result: {total: =steps.sub.output.total + 0}
`

func TestWorkflowStep(t *testing.T) {
	t.Run("child succeeds", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, childWF))
		eff := d.start(`{}`)
		starts := effectsOf(eff, EffectStartChild)
		is.Equal(len(starts), 1)
		c := starts[0].Child
		is.Equal(c.Ref, "t/child@1")
		is.Equal(string(c.Input), `{"n":21}`)
		is.Equal(*c.Deadline, t0.Add(time.Hour))
		is.Equal(d.s.Status, StatusRunning)
		err := d.try(Event{Kind: EventChildCompleted, ChildID: c.ID, ChildStatus: StatusSucceeded, Output: json.RawMessage(`{}`)})
		is.Equal(ErrorCode(err), CodeValidation) // total is required by the child's output schema
		d.must(Event{Kind: EventChildCompleted, ChildID: c.ID, ChildStatus: StatusSucceeded, Output: json.RawMessage(`{"total":42}`)})
		is.Equal(string(d.s.Output), `{"total":42}`)
	})
	t.Run("child failure fails the run", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, childWF))
		eff := d.start(`{}`)
		c := effectsOf(eff, EffectStartChild)[0].Child
		d.must(Event{Kind: EventChildCompleted, ChildID: c.ID, ChildStatus: StatusFailed, Error: &TaskError{Code: "KYC_FAILED", Message: "no"}})
		is.Equal(d.s.Status, StatusFailed)
		is.Equal(d.s.Error.Code, "KYC_FAILED")
		is.Equal(d.s.Error.Node, "sub")
	})
	t.Run("cancelled child", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, childWF))
		eff := d.start(`{}`)
		c := effectsOf(eff, EffectStartChild)[0].Child
		d.must(Event{Kind: EventChildCompleted, ChildID: c.ID, ChildStatus: StatusCancelled})
		is.Equal(d.s.Error.Code, "CHILD_CANCELLED")
	})
	t.Run("timeout opens an incident", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, childWF))
		d.start(`{}`)
		eff := d.fireNext()
		is.Equal(kinds(eff), "cancel_child,open_incident")
		inc := d.incident(IncidentTaskDeadline)
		is.Equal(inc.ChildID != "", true)
		c := d.s.Children[inc.ChildID]
		err := d.try(Event{Kind: EventChildCompleted, ChildID: c.ID, ChildStatus: StatusSucceeded, Output: json.RawMessage(`{"total":1}`)})
		is.Equal(ErrorCode(err), CodeRuntimeState)
		is.Equal(ErrorCode(d.resolve(inc, ResolveRetrySafe, "", "")), CodeReconciliationRequired) // not an action
		is.Equal(ErrorCode(d.resolve(inc, ResolveAccept, `{"total":"x"}`, "ref")), CodeRuntimeOutput)
		is.NoErr(d.resolve(inc, ResolveAccept, `{"total":5}`, "ref"))
		is.Equal(string(d.s.Output), `{"total":5}`)
	})
}

func TestForEachStep(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/foreach
input:
  type: object
  properties:
    xs: {type: array, items: {type: object, properties: {id: {type: string}, n: {type: integer}}}}
vars:
  total: {type: integer, default: 0}
steps:
  - id: each
    forEach: =input.xs
    as: x
    index: i
    concurrency: 2
    steps:
      - id: get
        action: t/fetch@1
        with: {id: =x.id}
      - id: add
        set:
          total: =vars.total + x.n + steps.get.output.count
    collect: =string(i) + ":" + x.id + ":" + string(steps.get.output.count)
result:
  all: =steps.each.output
  total: =vars.total
`)
	d := newDriver(t, p)
	eff := d.start(`{"xs":[{"id":"a","n":1},{"id":"b","n":2},{"id":"c","n":3}]}`)
	// Two iterations at a time, in index order.
	starts := effectsOf(eff, EffectStartTask)
	is.Equal(len(starts), 2)
	is.Equal(starts[0].Task.Instance, "get[0]")
	is.Equal(starts[1].Task.Instance, "get[1]")
	is.Equal(string(starts[1].Task.Input), `{"id":"b"}`)
	is.Equal(len(d.s.Scopes), 3) // the run's and two iterations

	// Completing the second first: the third starts, results stay in index
	// order.
	eff = d.must(Event{Kind: EventTaskCompleted, TaskID: starts[1].Task.TaskID, Output: json.RawMessage(`{"count":20}`)})
	third := effectsOf(eff, EffectStartTask)
	is.Equal(len(third), 1)
	is.Equal(third[0].Task.Instance, "get[2]")
	is.Equal(third[0].Task.Generation, 3)
	d.must(Event{Kind: EventTaskCompleted, TaskID: third[0].Task.TaskID, Output: json.RawMessage(`{"count":30}`)})
	d.must(Event{Kind: EventTaskCompleted, TaskID: starts[0].Task.TaskID, Output: json.RawMessage(`{"count":10}`)})
	is.Equal(d.s.Status, StatusSucceeded)
	is.Equal(string(d.s.Output), `{"all":["0:a:10","1:b:20","2:c:30"],"total":66}`)
	is.Equal(len(d.s.Scopes), 1) // iteration scopes are dropped
}

func TestForEachEmptyAndNested(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/nested
input: {type: object, properties: {rows: {type: array, items: {type: array, items: {type: integer}}}}}
steps:
  - id: outer
    forEach: =input.rows
    as: row
    index: r
    concurrency: 3
    steps:
      - id: inner
        forEach: =row
        as: cell
        index: c
        steps:
          - id: w
            wait: 1s
        collect: =cell * 10 + r
    collect: =steps.inner.output
`)
	d := newDriver(t, p)
	d.start(`{"rows":[[1,2],[],[3]]}`)
	instances := map[string]bool{}
	for i := 0; d.s.Status == StatusWaiting && i < 20; i++ {
		for _, tm := range d.s.Timers {
			instances[tm.Instance] = true
		}
		d.fireNext()
	}
	is.Equal(d.s.Status, StatusSucceeded)
	is.Equal(string(d.s.Output), `null`) // no result: the run's output is null
	is.Equal(outputOf(t, d.s, "outer"), `[[10,20],[],[32]]`)
	is.Equal(sortedStrings(instances), []string{"w[0][0]", "w[0][1]", "w[2][0]"})

	d = newDriver(t, p)
	d.start(`{"rows":[]}`)
	is.Equal(d.s.Status, StatusSucceeded)
	is.Equal(outputOf(t, d.s, "outer"), `[]`)
}

func TestParallelStep(t *testing.T) {
	const src = `kind: workflow
id: t/parallel
steps:
  - id: both
    parallel:
      - name: left
        steps:
          - id: a
            action: t/fetch@1
      - name: right
        steps:
          - id: b
            action: t/idem@1
          - id: stop
            switch:
              - when: =steps.b.output.ok
                next: end
            default: boom
          - id: boom
            fail: {code: RIGHT_FAILED, message: =string(steps.b.output.ok)}
  - id: after
    set: {}
result: {a: =steps.a.output.count, b: =steps.b.output.ok}
`
	_ = src
	t.Run("joins", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, strings.Replace(src, "  - id: after\n    set: {}\n", "", 1)))
		eff := d.start(`{}`)
		is.Equal(len(effectsOf(eff, EffectStartTask)), 2)
		d.complete("b", `{"ok":true}`)
		is.Equal(d.s.Status, StatusRunning)
		d.complete("a", `{"count":1}`)
		is.Equal(d.s.Status, StatusSucceeded)
		is.Equal(string(d.s.Output), `{"a":1,"b":true}`)
	})
	t.Run("a fail cancels the other branch", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, strings.Replace(src, "  - id: after\n    set: {}\n", "", 1)))
		d.start(`{}`)
		a := d.task("a")
		eff := d.complete("b", `{"ok":false}`)
		is.Equal(d.s.Status, StatusFailed)
		is.Equal(d.s.Error.Code, "RIGHT_FAILED")
		is.Equal(d.s.Error.Message, "false")
		cancels := effectsOf(eff, EffectCancelTask)
		is.Equal(len(cancels), 1)
		is.Equal(cancels[0].TaskID, a.ID)
		is.True(d.s.ExternalEffectsMayContinue)
		is.Equal(len(d.s.Tasks), 0)
		is.Equal(len(d.s.Timers), 0)
	})
}

func TestSwitchStep(t *testing.T) {
	const src = `kind: workflow
id: t/switch
input: {type: object, properties: {amount: {type: number}}}
steps:
  - id: route
    switch:
      - when: =input.amount >= 10000
        next: manual
      - when: =input.amount <= 0
        next: invalid
    default: auto
  - id: manual
    succeed: {result: manual}
  - id: invalid
    fail: {code: INVALID_AMOUNT, message: ="got " + string(input.amount)}
  - id: auto
    succeed: {result: auto}
`
	p := load(t, src)
	for _, tc := range []struct {
		amount, status, out string
	}{
		{"20000", "succeeded", `"manual"`},
		{"-1", "failed", ""},
		{"50", "succeeded", `"auto"`},
	} {
		is := is.New(t)
		d := newDriver(t, p)
		d.start(`{"amount":` + tc.amount + `}`)
		is.Equal(string(d.s.Status), tc.status)
		if tc.status == "failed" {
			is.Equal(d.s.Error.Code, "INVALID_AMOUNT")
			is.Equal(d.s.Error.Message, "got -1")
			continue
		}
		is.Equal(string(d.s.Output), tc.out)
	}
}

func TestSetStep(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/set
vars:
  a: {type: integer, default: 1}
  b: {type: integer, default: 10}
  total: {type: number, default: 0}
  small: {type: integer, maximum: 5, default: 0}
input: {type: object, properties: {n: {type: integer}}}
steps:
  - id: swap
    set:
      a: =vars.b
      b: =vars.a
      total: =vars.a + 1
  - id: limit
    set:
      small: =input.n
result: {a: =vars.a, b: =vars.b, total: =vars.total + 0.5}
`)
	d := newDriver(t, p)
	d.start(`{"n": 3}`)
	is.Equal(d.s.Status, StatusSucceeded)
	// Every assignment saw the variables as they were before the step; an
	// int assigned to a number variable becomes a double.
	is.Equal(string(d.s.Output), `{"a":10,"b":1,"total":2.5}`)
	is.Equal(string(d.s.Vars["total"]), `2.0`)

	d = newDriver(t, p)
	d.start(`{"n": 9}`)
	is.Equal(d.s.Status, StatusFailed)
	is.Equal(d.s.Error.Code, ErrCodeVarInvalid)
}

func TestSucceedAndFailSteps(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/end
input: {type: object, properties: {mode: {type: string}}}
output:
  type: object
  required: [source]
  properties:
    source: {type: string}
steps:
  - id: pick
    switch:
      - when: =input.mode == "cache"
        next: cached
      - when: =input.mode == "fail"
        next: broken
    default: plain
  - id: cached
    succeed: {result: {source: cache}}
  - id: broken
    fail: {code: BROKEN}
  - id: plain
    succeed: {}
result: {source: computed}
`)
	for mode, want := range map[string]string{"cache": `{"source":"cache"}`, "other": `{"source":"computed"}`} {
		d := newDriver(t, p)
		d.start(`{"mode":"` + mode + `"}`)
		is.Equal(d.s.Status, StatusSucceeded)
		is.Equal(string(d.s.Output), want)
		comp := effectsOf(d.last, EffectRunCompleted)[0].Completion
		is.Equal(string(comp.Output), want)
	}
	d := newDriver(t, p)
	d.start(`{"mode":"fail"}`)
	is.Equal(d.s.Status, StatusFailed)
	is.Equal(*d.s.Error, RunError{Code: "BROKEN", Node: "broken", Instance: "broken"})
}

func TestExpressionFailureFailsRun(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/expr-fail
input: {type: object, properties: {m: {type: object, additionalProperties: {type: integer}}}}
steps:
  - id: s
    switch:
      - when: =input.m["missing"] > 1
        next: end
`)
	d := newDriver(t, p)
	d.start(`{"m":{}}`)
	is.Equal(d.s.Status, StatusFailed)
	is.Equal(d.s.Error.Code, ErrCodeExpression)
	is.Equal(d.s.Error.Node, "s")
}
