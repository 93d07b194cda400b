-- The bridge's agent jobs: clients and tokens, jobs and their attempts,
-- conversation messages, the append-only audit log, tool observations and
-- idempotency records.
CREATE TABLE bridge_clients (
	id         TEXT PRIMARY KEY,
	created_at TEXT NOT NULL,
	revoked_at TEXT
);

-- Tokens are stored only as SHA-256 hashes. Scopes and profiles belong to
-- the token; the client name is the principal that owns jobs.
CREATE TABLE bridge_tokens (
	hash       BLOB PRIMARY KEY,
	client_id  TEXT NOT NULL REFERENCES bridge_clients(id),
	scopes     TEXT NOT NULL,
	profiles   TEXT NOT NULL,
	created_at TEXT NOT NULL,
	revoked_at TEXT
);
CREATE INDEX bridge_tokens_client ON bridge_tokens(client_id);

CREATE TABLE bridge_jobs (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	id           TEXT NOT NULL UNIQUE,
	client_id    TEXT NOT NULL,
	profile      TEXT NOT NULL,
	provider     TEXT NOT NULL,
	source       TEXT NOT NULL,
	state        TEXT NOT NULL,
	prompt       TEXT NOT NULL,
	work_dir     TEXT NOT NULL DEFAULT '',
	metadata     TEXT NOT NULL DEFAULT '{}',
	attempt      INTEGER NOT NULL DEFAULT 1,
	session_id   TEXT NOT NULL DEFAULT '',
	last_error   TEXT,
	result_text  TEXT,
	usage        TEXT NOT NULL DEFAULT '{}',
	created_at   TEXT NOT NULL,
	updated_at   TEXT NOT NULL,
	started_at   TEXT,
	finished_at  TEXT,
	queued_at    TEXT NOT NULL
);
CREATE INDEX bridge_jobs_client ON bridge_jobs(client_id, seq);
CREATE INDEX bridge_jobs_state ON bridge_jobs(state, queued_at);

CREATE TABLE bridge_attempts (
	job_id      TEXT NOT NULL REFERENCES bridge_jobs(id),
	n           INTEGER NOT NULL,
	state       TEXT NOT NULL,
	reason      TEXT NOT NULL,
	session_id  TEXT NOT NULL DEFAULT '',
	error       TEXT,
	usage       TEXT NOT NULL DEFAULT '{}',
	created_at  TEXT NOT NULL,
	started_at  TEXT,
	finished_at TEXT,
	PRIMARY KEY (job_id, n)
);

-- Conversation messages. A user message is pending until a turn takes it.
CREATE TABLE bridge_messages (
	job_id     TEXT NOT NULL REFERENCES bridge_jobs(id),
	seq        INTEGER NOT NULL,
	attempt    INTEGER NOT NULL,
	role       TEXT NOT NULL,
	text       TEXT NOT NULL,
	status     TEXT NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (job_id, seq)
);

-- Append-only: rows are only ever inserted.
CREATE TABLE bridge_audit (
	job_id     TEXT NOT NULL REFERENCES bridge_jobs(id),
	seq        INTEGER NOT NULL,
	attempt    INTEGER NOT NULL,
	kind       TEXT NOT NULL,
	summary    TEXT NOT NULL,
	payload    TEXT,
	created_at TEXT NOT NULL,
	PRIMARY KEY (job_id, seq)
);

CREATE TABLE bridge_tools (
	job_id      TEXT NOT NULL REFERENCES bridge_jobs(id),
	seq         INTEGER NOT NULL,
	attempt     INTEGER NOT NULL,
	call_id     TEXT NOT NULL,
	name        TEXT NOT NULL,
	input       TEXT,
	output      TEXT,
	status      TEXT NOT NULL,
	error       TEXT,
	files       TEXT NOT NULL DEFAULT '[]',
	has_files   INTEGER NOT NULL DEFAULT 0,
	started_at  TEXT NOT NULL,
	finished_at TEXT,
	PRIMARY KEY (job_id, seq)
);
CREATE INDEX bridge_tools_call ON bridge_tools(job_id, attempt, call_id);

-- Idempotency: the first answer to (client, route, key) is kept with the
-- hash of its body; a repeat with the same body gets the same answer.
CREATE TABLE bridge_idempotency (
	client_id  TEXT NOT NULL,
	scope      TEXT NOT NULL,
	key        TEXT NOT NULL,
	body_hash  BLOB NOT NULL,
	status     INTEGER NOT NULL,
	response   BLOB NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (client_id, scope, key)
);

CREATE TABLE bridge_settings (
	name  TEXT PRIMARY KEY,
	value BLOB NOT NULL
);
