// Package kernel is the deterministic workflow kernel of the platform: one
// pure function, Step(program, state, event) → (state, effects), that
// executes a compiled workflow artifact (package lang). The durable engine,
// the simulator and the debugger all drive runs through it, so a debug
// session shows exactly what production would do.
//
// # Programs
//
// Load decodes a workflow artifact, refuses partial or inconsistent ones,
// parses every CEL expression once with lang.ExprEnvOptions (all variables
// dyn; the compiler proved the types) and compiles schemas and decision
// tables. WithCatalog gives it the catalog lock the artifact was compiled
// against (required when the workflow references definitions: it pins
// output schemas); WithDefinitions gives it referenced decision tables
// (required) and actions (optional: their binding). A Program is immutable
// and safe for concurrent use.
//
// # Steps
//
// Step never reads a clock, draws a random number or does I/O. Events carry
// a sequence number (exactly the state's Seq+1) and a time chosen by the
// engine; ids of tasks, timers, human tasks, child runs and incidents are
// UUIDs derived from the run id, the node, its generation and the attempt.
// Before applying an event, Step fires every timer due at the event's time
// in DueOrder (overall run timeout, then signal timeouts and other
// deadlines, then duration waits by due time and node id), which is what
// makes "a signal accepted exactly at its deadline is too late" hold
// whether or not the scheduler fired the deadline first. A refused event
// returns an *Error with the specification's code (PF-RUNTIME-STATE,
// PF-INCIDENT-REVISION, PF-RUNTIME-DEADLINE,
// PF-RUNTIME-RECONCILIATION_REQUIRED, PF-RUNTIME-OUTPUT, PF-VALIDATION,
// PF-OPERATION-CAPACITY) and the state unchanged.
//
// Actions and agents become tasks (start_task), retried with exponential
// backoff timers while the action's policy allows; a failure that cannot be
// retried, exhausted retries, an unknown outcome of an unsafe action and a
// passed deadline suspend the run with an incident (PF-TASK-FAILED,
// PF-TASK-RETRIES-EXHAUSTED, PF-TASK-AMBIGUOUS, PF-TASK-DEADLINE). All
// active incidents share one barrier: the run continues once, after the
// last is resolved with retry_safe, accept_reconciled_result or terminate.
//
// Work per Step is bounded: at most MaxReductions node executions, after
// which the Step emits a Continue effect and the engine feeds EventContinue.
//
// Replay feeds a recorded history to Step again and reports whether it
// reproduces the recorded state (consistent, inconsistent, incomplete).
//
// README.md in this directory describes the state, event and effect model
// and the engine's side of the contract.
package kernel
