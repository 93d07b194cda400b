-- Debug sessions (docs/platform-api.md, "Debug sessions"): one row per
-- session; body is the whole session as JSON (sim.Session: the pinned
-- artifact, lock and definitions, mocks, the kernel state, the view's
-- parts). Secret-marked values are refused before anything is stored.
-- Times are Unix milliseconds (UTC).
CREATE TABLE platform_debug_sessions (
	id          TEXT PRIMARY KEY,
	tenant_id   TEXT NOT NULL,
	project_id  TEXT NOT NULL,
	creator_id  TEXT NOT NULL,
	revision    INTEGER NOT NULL CHECK (revision > 0),
	status      TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL,
	body        BLOB NOT NULL
);
CREATE INDEX platform_debug_sessions_project ON platform_debug_sessions(project_id, expires_at);
CREATE INDEX platform_debug_sessions_creator ON platform_debug_sessions(creator_id, expires_at);
