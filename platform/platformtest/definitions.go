// Package platformtest holds the workflow definitions that the platform's
// tests and the CLI's tests both publish, so that the two suites exercise
// the same workflows.
package platformtest

import (
	"fmt"
	"strings"
)

// Definitions of the run tests: an echo action, a noop action and a
// workflow with set, switch, wait, succeed and fail.
const (
	// GreetAction echoes its input (connector echo).
	GreetAction = `kind: action
id: acme/greet
version: 1
sideEffect: read_only
input:
  type: object
  properties:
    name: {type: string}
output:
  type: object
  properties:
    name: {type: string}
connector: echo
`
	// NothingAction answers {} (connector noop).
	NothingAction = `kind: action
id: acme/nothing
version: 1
sideEffect: read_only
input: {type: object}
output: {type: object}
connector: noop
`
	// ThreeStepWorkflow is the run benchmarks' workflow (the platform's
	// BenchmarkDurableThreeStepRuns and the bench/ harness, which runs the
	// same three steps on each peer): GreetAction, NothingAction, succeed.
	ThreeStepWorkflow = `kind: workflow
id: bench/three
version: 1
input:
  type: object
  properties:
    name: {type: string}
steps:
  - id: greet
    action: acme/greet@1
    with:
      name: =input.name
  - id: nothing
    action: acme/nothing@1
    with: {}
  - id: done
    succeed:
      result: =steps.greet.output.name
`
	// FlowWorkflow greets input.name, then succeeds, fails (mode fail) or
	// waits input.pause first (mode wait).
	FlowWorkflow = `kind: workflow
id: acme/flow
version: 1
input:
  type: object
  required: [name]
  properties:
    name: {type: string}
    mode: {type: string}
    pause: {type: string}
    apiKey: {type: string, x-secret: true}
output:
  type: object
  properties:
    greeting: {type: string}
    count: {type: integer}
vars:
  count: {type: integer, default: 0}
steps:
  - id: greet
    action: acme/greet@1
    with:
      name: =input.name
  - id: nothing
    action: acme/nothing@1
    with: {}
  - id: bump
    set:
      count: =vars.count + 1
  - id: route
    switch:
      - when: =has(input.mode) && input.mode == "fail"
        next: broken
      - when: =has(input.mode) && input.mode == "wait"
        next: pause
    default: done
  - id: pause
    wait: =input.pause
    next: done
  - id: done
    succeed:
      result:
        greeting: ="hello " + steps.greet.output.name
        count: =vars.count
  - id: broken
    fail:
      code: ASKED_TO_FAIL
      message: failing on purpose
`
)

// ApprovalWorkflow waits for the signal order.approved (with a deadline).
const ApprovalWorkflow = `kind: workflow
id: acme/approval
version: 1
output:
  type: object
  properties:
    approver: {type: string}
steps:
  - id: approval
    signal: order.approved
    schema:
      type: object
      required: [approver]
      properties:
        approver: {type: string}
    deadline: 1h
  - id: done
    succeed:
      result:
        approver: =steps.approval.output.approver
`

// A worker-bound action nothing performs: with a step deadline, a run of
// SlowWorkflow stops with a PF-TASK-DEADLINE incident.
const (
	SlowAction = `kind: action
id: acme/slow
version: 1
sideEffect: read_only
input: {type: object}
output:
  type: object
  properties:
    ok: {type: boolean}
worker: billing
`
	SlowWorkflow = `kind: workflow
id: acme/slow-flow
version: 1
input: {type: object}
output:
  type: object
  properties:
    ok: {type: boolean}
steps:
  - id: call
    action: acme/slow@1
    with: {}
    timeout: 100ms
    deadline: 100ms
  - id: done
    succeed:
      result:
        ok: =steps.call.output.ok
`
)

// CallsWorkflow is workflow id calling action (a reference, id@version)
// n times, one step (c0, c1, ...) after another, each with the literal
// input with.
func CallsWorkflow(id, action, with string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kind: workflow\nid: %s\nversion: 1\nsteps:\n", id)
	for i := range n {
		fmt.Fprintf(&b, "  - id: c%d\n    action: %s\n    with: %s\n", i, action, with)
	}
	return b.String()
}
