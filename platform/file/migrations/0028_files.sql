-- Files (spec 2, migration 0028_files): uploaded content of an environment,
-- stored as content-addressed blobs (SHA-256) under files/ in the data
-- directory; these rows are the metadata. A row is written before its
-- first chunk (status uploading) and marked ready only after the blob was
-- verified and renamed into place, so a ready row always has its blob.
-- Times are Unix milliseconds (UTC).
CREATE TABLE platform_files (
	id              TEXT PRIMARY KEY,
	tenant_id       TEXT NOT NULL,
	project_id      TEXT NOT NULL,
	environment_id  TEXT NOT NULL REFERENCES platform_environments(id),
	name            TEXT NOT NULL,
	media_type      TEXT NOT NULL,
	-- size and sha256 (lowercase hex) are declared at creation and
	-- verified by finish.
	size            INTEGER NOT NULL CHECK (size >= 0),
	sha256          TEXT NOT NULL,
	chunk_size      INTEGER NOT NULL CHECK (chunk_size > 0),
	-- uploading: chunks arrive; ready: finished and visible; deleted:
	-- deleted while a run that refers to it has not ended (kept, hidden
	-- from the environment's routes, until no run needs it).
	status          TEXT NOT NULL CHECK (status IN ('uploading', 'ready', 'deleted')),
	-- received_chunks counts the chunks stored, in index order: chunk i is
	-- counted only after its bytes were written and synced.
	received_chunks INTEGER NOT NULL DEFAULT 0,
	-- origin: environment (E/files), human_task or task (a worker task),
	-- with the task's id and run.
	origin_kind     TEXT NOT NULL CHECK (origin_kind IN ('environment', 'human_task', 'task')),
	origin_id       TEXT,
	origin_run_id   TEXT,
	created_by      TEXT NOT NULL,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	-- expires_at: an upload not finished by then is reclaimed.
	expires_at      INTEGER,
	finished_at     INTEGER,
	deleted_at      INTEGER,
	deleted_by      TEXT
);
CREATE INDEX platform_files_env ON platform_files(environment_id, id);
CREATE INDEX platform_files_expiry ON platform_files(status, expires_at);
CREATE INDEX platform_files_digest ON platform_files(sha256);

-- File references: the runs whose values (input, signal payloads, human
-- task data, task outputs) refer to a file. A deleted file is kept while
-- one of these runs has not ended.
CREATE TABLE platform_file_refs (
	file_id    TEXT NOT NULL REFERENCES platform_files(id) ON DELETE CASCADE,
	run_id     TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (file_id, run_id)
) WITHOUT ROWID;
CREATE INDEX platform_file_refs_run ON platform_file_refs(run_id);
