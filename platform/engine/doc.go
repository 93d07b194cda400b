// Package engine runs activated workflows durably on the deterministic
// kernel (package kernel): the run routes under E/runs, the incident routes
// (E/runs/{run}/incidents, E/incidents, resolution with receipts), the runs'
// stored states, append-only events and timers (migration 0006_runs), the
// incident index and receipts (0010_incidents), and the engine loop.
//
// Every event is stepped with Seq = state.Seq+1 and At = the server time;
// the event, the new state, the run's pending timers and an inline-work
// flag are written in one transaction, so nothing is lost on a crash and a
// restart needs no recovery step. The loop (Run) then completes tasks of
// actions bound to the built-in echo and noop adapters in process, feeds
// continue, and fires due timers in kernel.DueOrder, at most BatchSize runs
// per turn, waking every PollInterval or when a route changed a run.
//
// Programs are loaded once per published workflow version (they never
// change) with a catalog lock built from the workflow's references and the
// referenced action and decision-table artifacts.
//
// Out of this package's scope so far: tasks of other executors (http,
// connector manifests, workers, agents), human tasks, child runs, signals
// and schedules. A run that issues such a task keeps it in its
// state (status running) until an executor reports its outcome.
package engine
