-- Run lifecycle: the callee version of child runs, the caller link of a
-- sub-workflow run, pause, test runs, the inbox of events held for a run,
-- and the run log. Times are Unix milliseconds (UTC).
ALTER TABLE platform_runs ADD COLUMN published_version_id TEXT;
-- caller_run_id/caller_child_id: the run (and its child id) whose workflow
-- step started this run; its end is fed back as child_completed.
ALTER TABLE platform_runs ADD COLUMN caller_run_id TEXT REFERENCES platform_runs(id);
ALTER TABLE platform_runs ADD COLUMN caller_child_id TEXT;
ALTER TABLE platform_runs ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE platform_runs ADD COLUMN test INTEGER NOT NULL DEFAULT 0;
CREATE INDEX platform_runs_env_created ON platform_runs(environment_id, created_at, id);

-- Events held for a run, applied in id order by the engine loop: events
-- that arrive while the run is paused, and events from other runs (a
-- child's end, a caller's cancellation), so one transaction never steps
-- two runs.
CREATE TABLE platform_run_inbox (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id     TEXT NOT NULL REFERENCES platform_runs(id),
	event      TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE INDEX platform_run_inbox_run ON platform_run_inbox(run_id, id);

-- The run log: history facts and the engine's notes, in time order.
CREATE TABLE platform_run_logs (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id   TEXT NOT NULL REFERENCES platform_runs(id),
	at       INTEGER NOT NULL,
	seq      INTEGER,
	level    TEXT NOT NULL,
	type     TEXT NOT NULL,
	node_id  TEXT,
	message  TEXT NOT NULL,
	data     TEXT
);
CREATE INDEX platform_run_logs_run ON platform_run_logs(run_id, id);
