-- Schedules (spec 2, "Runs, incidents, schedules" and the Schedule state
-- table). A schedule starts runs of an activation at the occurrences of a
-- five-field UTC calendar. Times are Unix milliseconds (UTC).
--
-- status: enabled, disabled, blocked or deleted (a readable tombstone).
-- next_due_at is the cursor: the first occurrence not yet handled (NULL
-- unless enabled). principal_id is the execution principal: whoever saved
-- or enabled the current revision.
CREATE TABLE platform_schedules (
	id             TEXT PRIMARY KEY,
	tenant_id      TEXT NOT NULL REFERENCES platform_tenants(id),
	project_id     TEXT NOT NULL REFERENCES platform_projects(id),
	environment_id TEXT NOT NULL REFERENCES platform_environments(id),
	revision       INTEGER NOT NULL,
	status         TEXT NOT NULL,
	cron           TEXT NOT NULL,
	activation_id  TEXT NOT NULL,
	input          TEXT NOT NULL,
	principal_id   TEXT NOT NULL,
	blocked_reason TEXT,
	next_due_at    INTEGER,
	created_at     INTEGER NOT NULL,
	created_by     TEXT NOT NULL,
	updated_at     INTEGER NOT NULL,
	updated_by     TEXT NOT NULL
);
CREATE INDEX platform_schedules_env ON platform_schedules(environment_id, id);
CREATE INDEX platform_schedules_due ON platform_schedules(next_due_at, id) WHERE status = 'enabled';

-- Occurrences: a started occurrence (run_id set; from_at = to_at = the
-- occurrence key) or an immutable skipped range of missed occurrences
-- (from_at..to_at). The primary key makes an occurrence key start at most
-- one run: the row is written in the transaction that starts the run.
CREATE TABLE platform_schedule_occurrences (
	schedule_id TEXT NOT NULL REFERENCES platform_schedules(id),
	from_at     INTEGER NOT NULL,
	to_at       INTEGER NOT NULL,
	kind        TEXT NOT NULL,
	run_id      TEXT,
	revision    INTEGER NOT NULL,
	observed_at INTEGER NOT NULL,
	PRIMARY KEY (schedule_id, from_at)
);
