-- Editor documents (docs/platform-api.md, "Editor documents"): one canvas
-- and one test-data document per draft; document is the camelCase JSON;
-- contains_run_data and source_environment_ids (a JSON array) are derived
-- by the server and sticky. Times are Unix milliseconds (UTC).
CREATE TABLE platform_studio_documents (
	project_id             TEXT NOT NULL,
	draft_id               TEXT NOT NULL,
	kind                   TEXT NOT NULL CHECK (kind IN ('canvas', 'test-data')),
	revision               INTEGER NOT NULL CHECK (revision > 0),
	draft_revision         INTEGER NOT NULL,
	document               BLOB NOT NULL,
	contains_run_data      INTEGER NOT NULL,
	source_environment_ids TEXT NOT NULL,
	updated_at             INTEGER NOT NULL,
	updated_by             TEXT NOT NULL,
	PRIMARY KEY (project_id, draft_id, kind)
);
