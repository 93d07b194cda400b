-- Definitions of a project (spec 2, "Catalog and compiler", "Definitions"):
-- published versions of workflows, actions, connectors and decision tables,
-- and drafts with every revision. Ids are canonical lowercase UUID strings;
-- times are Unix milliseconds (UTC).

-- A published version never changes: a change publishes a new version with
-- a new id. (project_id, kind, definition_id, version) is published once.
-- artifact is the compiler's canonical JSON (digest is its SHA-256),
-- source the exact published text, catalog_digest the digest of the
-- project catalog lock it was compiled against.
CREATE TABLE platform_definition_versions (
	id             TEXT PRIMARY KEY,
	tenant_id      TEXT NOT NULL REFERENCES platform_tenants(id),
	project_id     TEXT NOT NULL REFERENCES platform_projects(id),
	kind           TEXT NOT NULL CHECK (kind IN ('workflow', 'action', 'connector', 'decisionTable')),
	definition_id  TEXT NOT NULL,
	version        INTEGER NOT NULL CHECK (version > 0),
	digest         TEXT NOT NULL,
	artifact       TEXT NOT NULL,
	source         TEXT NOT NULL,
	catalog_digest TEXT NOT NULL,
	published_at   INTEGER NOT NULL,
	published_by   TEXT NOT NULL,
	UNIQUE (project_id, kind, definition_id, version)
);
CREATE INDEX platform_definition_versions_list ON platform_definition_versions(project_id, kind, id);

CREATE TRIGGER platform_definition_versions_no_update BEFORE UPDATE ON platform_definition_versions
BEGIN
	SELECT RAISE(ABORT, 'published versions never change');
END;
CREATE TRIGGER platform_definition_versions_no_delete BEFORE DELETE ON platform_definition_versions
BEGIN
	SELECT RAISE(ABORT, 'published versions are never deleted');
END;

-- A draft is work in progress (any source, even one that does not compile).
-- revision counts lifecycle revisions: every save and the retirement.
-- A retired draft (retired_at set) is never saved again and its id is never
-- reused.
CREATE TABLE platform_drafts (
	id         TEXT PRIMARY KEY,
	tenant_id  TEXT NOT NULL REFERENCES platform_tenants(id),
	project_id TEXT NOT NULL REFERENCES platform_projects(id),
	kind       TEXT,
	revision   INTEGER NOT NULL CHECK (revision > 0),
	source     TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	created_by TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	updated_by TEXT NOT NULL,
	retired_at INTEGER,
	retired_by TEXT
);
CREATE INDEX platform_drafts_list ON platform_drafts(project_id, id);

-- Every lifecycle revision of a draft, kept for reads and exports.
CREATE TABLE platform_draft_revisions (
	draft_id TEXT NOT NULL REFERENCES platform_drafts(id),
	revision INTEGER NOT NULL CHECK (revision > 0),
	action   TEXT NOT NULL CHECK (action IN ('save', 'retire')),
	kind     TEXT,
	source   TEXT NOT NULL,
	at       INTEGER NOT NULL,
	by       TEXT NOT NULL,
	PRIMARY KEY (draft_id, revision)
);

CREATE TRIGGER platform_draft_revisions_no_update BEFORE UPDATE ON platform_draft_revisions
BEGIN
	SELECT RAISE(ABORT, 'draft revisions never change');
END;
