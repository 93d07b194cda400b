-- Worker tasks: attempts of actions bound to a worker queue, written with
-- the state that issued them and claimed by workers through the API under
-- a lease. The row goes in the transaction that feeds the attempt's
-- outcome or withdraws it. Times are Unix milliseconds (UTC).
CREATE TABLE platform_worker_tasks (
	task_id          TEXT PRIMARY KEY,
	run_id           TEXT NOT NULL REFERENCES platform_runs(id),
	tenant_id        TEXT NOT NULL,
	project_id       TEXT NOT NULL,
	environment_id   TEXT NOT NULL,
	queue            TEXT NOT NULL,
	spec             TEXT NOT NULL,
	status           TEXT NOT NULL CHECK (status IN ('ready', 'leased')),
	worker_id        TEXT,
	principal_id     TEXT,
	lease_expires_at INTEGER,
	claimed_at       INTEGER,
	created_at       INTEGER NOT NULL
);
CREATE INDEX platform_worker_tasks_ready ON platform_worker_tasks(environment_id, queue, status, created_at);
CREATE INDEX platform_worker_tasks_lease ON platform_worker_tasks(status, lease_expires_at);
