// Package engine runs activated workflows durably on the deterministic
// kernel (package kernel).
//
// Storage. Every event is stepped with Seq = state.Seq+1 and At = the
// server time; the event, the new state, the run's pending timers, the
// work flag and every effect turned into durable work (perform) are
// written in one transaction, so nothing is lost on a crash and a restart
// needs no recovery step beyond calls that were in flight:
//
//   - tasks of built-in echo/noop adapters complete inline (needs_work);
//   - http adapter calls and agent jobs get a dispatch row (0014), marked
//     started in its own commit before the call; a started row found after
//     a restart is reported as task_outcome_unknown, so an unsafe step is
//     never repeated without a PF-TASK-AMBIGUOUS incident;
//   - worker tasks get a queue row (0012) that workers claim under a lease;
//     an expired lease is an unknown outcome too;
//   - human tasks get a row (0013) people claim and complete;
//   - a workflow step's child run is created in the caller's transaction,
//     and its end comes back through the caller's inbox (0025) as
//     child_completed; events for a paused run wait in the same inbox;
//   - lifecycle events go to the outbox (0017), relayed to the broker topic
//     platform.runs for the callbacks service; history records and engine
//     notes go to the run log (0025);
//   - an ended run's events and log lines can be archived into one packed
//     row (0032, archive.go) and restored, and an archived run purged, by
//     the routes or by the retention phase (RunRetention).
//
// The loop (Run) turns: runs with work (inbox, inline tasks, continue) and
// runs with due timers in kernel.DueOrder, BatchSize of each per turn and
// driveParallel at once so their commits share fsyncs; pending dispatches;
// recoverable leases; the outbox. It wakes every PollInterval or when a
// route or a finished call changed something.
//
// Routes: runs (start, read, cancel, retry, history, signals, pause,
// resume, archive, restore, purge), lists (run summaries, steps, logs), incidents, worker tasks and
// human tasks, all under E = /tenants/{t}/projects/{p}/environments/{e}.
//
// Programs are loaded once per published workflow version (they never
// change) with a catalog lock built from the workflow's references and the
// referenced action and decision-table artifacts.
package engine
