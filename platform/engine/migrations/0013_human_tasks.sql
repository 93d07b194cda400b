-- Human tasks: the tasks for people that human steps open. A row is
-- written in the transaction that stores the state that opened the task,
-- and closed in the one that completes it (with the run's step) or
-- withdraws it (its deadline passed, the run ended). Times are Unix
-- milliseconds (UTC); assignees and decisions are JSON arrays of strings,
-- form is the step's JSON Schema and data the submitted JSON. revision
-- starts at 1 and grows with every change: claim, release, reassignment,
-- completion, close.
CREATE TABLE platform_human_tasks (
	id             TEXT PRIMARY KEY,
	run_id         TEXT NOT NULL REFERENCES platform_runs(id),
	environment_id TEXT NOT NULL REFERENCES platform_environments(id),
	node_id        TEXT NOT NULL,
	instance       TEXT NOT NULL,
	generation     INTEGER NOT NULL,
	title          TEXT NOT NULL,
	description    TEXT NOT NULL DEFAULT '',
	assignees      TEXT NOT NULL,
	decisions      TEXT NOT NULL,
	form           TEXT,
	status         TEXT NOT NULL CHECK (status IN ('open', 'claimed', 'completed', 'closed')),
	-- claimed_by is the principal holding the task (status claimed); it is
	-- kept once the task is completed or closed.
	claimed_by     TEXT,
	claimed_at     INTEGER,
	completed_by   TEXT,
	decision       TEXT,
	data           TEXT,
	-- close_reason is the kernel's reason of a withdrawal: timeout (the
	-- step's deadline), cancelled, terminated, run_deadline, step_timeout
	-- or run_ended.
	close_reason   TEXT,
	closed_at      INTEGER,
	revision       INTEGER NOT NULL DEFAULT 1 CHECK (revision > 0),
	opened_at      INTEGER NOT NULL,
	deadline_at    INTEGER,
	updated_at     INTEGER NOT NULL,
	CHECK (status <> 'claimed' OR claimed_by IS NOT NULL)
);
CREATE INDEX platform_human_tasks_env ON platform_human_tasks(environment_id, id);
CREATE INDEX platform_human_tasks_status ON platform_human_tasks(environment_id, status, id);
CREATE INDEX platform_human_tasks_run ON platform_human_tasks(run_id);
