-- Software-factory runs (spec 3, "Factory run inspection"; docs/factory-api.md).
-- Times are Unix milliseconds (UTC); ids are UUID strings.

CREATE TABLE factory_runs (
	id                  TEXT PRIMARY KEY,
	seq                 INTEGER NOT NULL UNIQUE, -- creation order (queue order, list order)
	mode                TEXT NOT NULL,           -- build, maintenance, test
	state               TEXT NOT NULL,
	repo                TEXT NOT NULL,           -- absolute path of the repository root
	subdir              TEXT NOT NULL DEFAULT '',-- project directory inside the repository
	instruction         TEXT NOT NULL DEFAULT '',
	provider            TEXT NOT NULL DEFAULT '',
	profile             TEXT NOT NULL DEFAULT '',
	policy              TEXT NOT NULL,           -- JSON: the frozen policy and runner settings
	checks              TEXT NOT NULL DEFAULT '[]', -- JSON: the verification commands frozen in the plan
	source_revision     TEXT NOT NULL DEFAULT '',
	source_tree         TEXT NOT NULL DEFAULT '',
	workspace           TEXT NOT NULL DEFAULT '',
	checkpoint_revision TEXT NOT NULL DEFAULT '',
	changed_files       TEXT NOT NULL DEFAULT '[]', -- JSON array
	diff_bytes          INTEGER NOT NULL DEFAULT 0,
	plan_revision       INTEGER NOT NULL DEFAULT 1,
	current_task        INTEGER NOT NULL DEFAULT 0,
	current_command     TEXT NOT NULL DEFAULT '',
	error_code          TEXT NOT NULL DEFAULT '',
	error_message       TEXT NOT NULL DEFAULT '',
	retry_of            TEXT NOT NULL DEFAULT '',
	journal_count       INTEGER NOT NULL DEFAULT 0,
	journal_head        TEXT NOT NULL DEFAULT '',
	created_at          INTEGER NOT NULL,
	started_at          INTEGER NOT NULL DEFAULT 0,
	finished_at         INTEGER NOT NULL DEFAULT 0,
	updated_at          INTEGER NOT NULL
);
CREATE INDEX factory_runs_state ON factory_runs(state, seq);

CREATE TABLE factory_tasks (
	run_id      TEXT NOT NULL REFERENCES factory_runs(id),
	idx         INTEGER NOT NULL, -- 1-based position in the plan
	kind        TEXT NOT NULL,    -- agent, verify
	role        TEXT NOT NULL,
	title       TEXT NOT NULL,
	instruction TEXT NOT NULL DEFAULT '',
	state       TEXT NOT NULL,
	revision    INTEGER NOT NULL, -- plan revision that added the task
	attempt     INTEGER NOT NULL DEFAULT 0, -- verification attempt it runs or repairs
	error       TEXT NOT NULL DEFAULT '',
	started_at  INTEGER NOT NULL DEFAULT 0,
	finished_at INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (run_id, idx)
);

-- One agent turn of an agent task.
CREATE TABLE factory_turns (
	run_id     TEXT NOT NULL REFERENCES factory_runs(id),
	task_idx   INTEGER NOT NULL,
	provider   TEXT NOT NULL,
	exit_code  INTEGER NOT NULL,
	is_error   INTEGER NOT NULL,
	failure    TEXT NOT NULL DEFAULT '',
	text       TEXT NOT NULL DEFAULT '',
	stderr     TEXT NOT NULL DEFAULT '',
	events     TEXT NOT NULL DEFAULT '[]', -- JSON array, bounded
	started_at INTEGER NOT NULL,
	duration_ms INTEGER NOT NULL,
	PRIMARY KEY (run_id, task_idx)
);

-- Every verification command of every attempt.
CREATE TABLE factory_checks (
	run_id      TEXT NOT NULL REFERENCES factory_runs(id),
	attempt     INTEGER NOT NULL,
	idx         INTEGER NOT NULL,
	name        TEXT NOT NULL,
	command     TEXT NOT NULL, -- JSON array: the argument vector
	source      TEXT NOT NULL, -- request, .factory.yaml, go, node, python, rust, make
	timeout_ms  INTEGER NOT NULL,
	exit_code   INTEGER NOT NULL,
	timed_out   INTEGER NOT NULL,
	output      TEXT NOT NULL,
	truncated   INTEGER NOT NULL,
	started_at  INTEGER NOT NULL,
	duration_ms INTEGER NOT NULL,
	PRIMARY KEY (run_id, attempt, idx)
);

-- Write-ahead journal, hash-chained per run (factory/journal.go).
CREATE TABLE factory_journal (
	run_id    TEXT NOT NULL REFERENCES factory_runs(id),
	seq       INTEGER NOT NULL,
	kind      TEXT NOT NULL, -- intent, receipt, reconciliation
	action    TEXT NOT NULL,
	ref       INTEGER NOT NULL DEFAULT 0, -- the intent a receipt or reconciliation answers
	data      TEXT NOT NULL,
	at        INTEGER NOT NULL,
	prev_hash TEXT NOT NULL,
	hash      TEXT NOT NULL,
	PRIMARY KEY (run_id, seq)
);

-- Events waiting to be published on the broker topic factory.runs.
CREATE TABLE factory_outbox (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	event_id   TEXT NOT NULL,
	event_type TEXT NOT NULL,
	run_id     TEXT NOT NULL,
	payload    TEXT NOT NULL
);
