-- Human tasks: the open and closed tasks for people of human steps,
-- written with the state that opened or closed them. Times are Unix
-- milliseconds (UTC); assignees, decisions, form and data are JSON.
CREATE TABLE platform_human_tasks (
	id             TEXT PRIMARY KEY,
	run_id         TEXT NOT NULL REFERENCES platform_runs(id),
	environment_id TEXT NOT NULL,
	node_id        TEXT NOT NULL,
	instance       TEXT NOT NULL,
	generation     INTEGER NOT NULL,
	title          TEXT NOT NULL,
	description    TEXT,
	assignees      TEXT NOT NULL,
	decisions      TEXT NOT NULL,
	form           TEXT,
	status         TEXT NOT NULL CHECK (status IN ('open', 'claimed', 'completed', 'closed')),
	claimed_by     TEXT,
	completed_by   TEXT,
	decision       TEXT,
	data           TEXT,
	close_reason   TEXT,
	revision       INTEGER NOT NULL DEFAULT 1,
	opened_at      INTEGER NOT NULL,
	deadline_at    INTEGER,
	updated_at     INTEGER NOT NULL
);
CREATE INDEX platform_human_tasks_env ON platform_human_tasks(environment_id, status, opened_at);
