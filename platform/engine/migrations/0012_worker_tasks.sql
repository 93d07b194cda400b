-- Worker tasks: attempts of actions bound to a worker queue (`worker:
-- <queue>`), written with the state that issued them and claimed by workers
-- through the API under a lease. A row is deleted in the transaction that
-- feeds the attempt's outcome (complete, fail, an expired lease fed as an
-- unknown outcome) or withdraws it (attempt timeout, step deadline, the run
-- ended); a claimed task is never handed to another worker. Times are Unix
-- milliseconds (UTC).
CREATE TABLE platform_worker_tasks (
	task_id          TEXT PRIMARY KEY,
	run_id           TEXT NOT NULL REFERENCES platform_runs(id),
	tenant_id        TEXT NOT NULL,
	project_id       TEXT NOT NULL,
	environment_id   TEXT NOT NULL,
	queue            TEXT NOT NULL,
	-- spec is the kernel's TaskSpec of the attempt (JSON).
	spec             TEXT NOT NULL,
	status           TEXT NOT NULL CHECK (status IN ('ready', 'leased')),
	-- deadline_at is the claim deadline: a tenth of the attempt's time (at
	-- most a second) before the attempt's deadline. From then on the task is
	-- no longer handed out, and the scheduler fails it as TASK_NOT_CLAIMED.
	deadline_at      INTEGER,
	-- The lease: the worker process's name, the principal it authenticated
	-- as, and when the lease ends unless a heartbeat extends it.
	worker_id        TEXT,
	principal_id     TEXT,
	lease_expires_at INTEGER,
	claimed_at       INTEGER,
	heartbeat_at     INTEGER,
	created_at       INTEGER NOT NULL,
	CHECK ((status = 'leased') = (worker_id IS NOT NULL AND principal_id IS NOT NULL AND lease_expires_at IS NOT NULL))
);
CREATE INDEX platform_worker_tasks_ready ON platform_worker_tasks(environment_id, queue, status, created_at);
CREATE INDEX platform_worker_tasks_lease ON platform_worker_tasks(status, lease_expires_at);
CREATE INDEX platform_worker_tasks_env ON platform_worker_tasks(environment_id, task_id);

-- How each worker task ended, written in the transaction that deleted its
-- row: completed or failed (by the lease holder, with the hash of its
-- request and the answer given, so the same report sent again gets the same
-- answer), outcome_unknown (the lease expired) or withdrawn (the kernel's
-- cancel_task; reason says why). A call about an ended task answers 409
-- PF-RUNTIME-STATE with that reason; a task id never issued answers 404.
-- Kept like the run's history.
CREATE TABLE platform_worker_task_ends (
	task_id        TEXT PRIMARY KEY,
	run_id         TEXT NOT NULL REFERENCES platform_runs(id),
	environment_id TEXT NOT NULL,
	outcome        TEXT NOT NULL CHECK (outcome IN ('completed', 'failed', 'outcome_unknown', 'withdrawn')),
	reason         TEXT NOT NULL,
	worker_id      TEXT,
	principal_id   TEXT,
	request_hash   BLOB,
	response       TEXT,
	ended_at       INTEGER NOT NULL
);
CREATE INDEX platform_worker_task_ends_run ON platform_worker_task_ends(run_id);
