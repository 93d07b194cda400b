-- Dispatches (engine executors): the tasks the daemon performs itself
-- outside the kernel: http connector calls and agent jobs. A row is written
-- with the state that issued the task (status pending), marked started in
-- its own commit before the call is made, and deleted in the transaction
-- that feeds the task's outcome. A started row found after a restart is an
-- attempt whose outcome is unknown: the engine feeds task_outcome_unknown,
-- so an unsafe step is never repeated without an incident.
CREATE TABLE platform_task_dispatches (
	task_id        TEXT PRIMARY KEY,
	run_id         TEXT NOT NULL REFERENCES platform_runs(id),
	environment_id TEXT NOT NULL,
	executor       TEXT NOT NULL CHECK (executor IN ('http', 'agent', 'unavailable')),
	spec           TEXT NOT NULL,
	status         TEXT NOT NULL CHECK (status IN ('pending', 'started')),
	job_id         TEXT,
	created_at     INTEGER NOT NULL,
	started_at     INTEGER
);
CREATE INDEX platform_task_dispatches_status ON platform_task_dispatches(status, created_at);
CREATE INDEX platform_task_dispatches_run ON platform_task_dispatches(run_id);
