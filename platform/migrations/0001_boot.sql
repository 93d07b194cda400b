-- Platform foundation (spec 2): the platform's own secrets, the scope
-- hierarchy tenant > project > environment, and the idempotency records
-- that changes commit together with their effect. Ids are canonical
-- lowercase UUID strings; times are Unix milliseconds (UTC).

-- Secrets of the platform itself, sealed with the data directory's secret
-- box (AES-256-GCM, associated data "platform/secret/<name>"): the built-in
-- identity provider's RS256 signing key and the page cursor key.
CREATE TABLE platform_secrets (
	name       TEXT PRIMARY KEY,
	sealed     BLOB NOT NULL,
	created_at INTEGER NOT NULL
);

-- Small facts about the installation, e.g. the local workspace created on
-- first start ("local_workspace", JSON).
CREATE TABLE platform_meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);

CREATE TABLE platform_tenants (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL,
	revision   INTEGER NOT NULL DEFAULT 1,
	created_at INTEGER NOT NULL,
	created_by TEXT NOT NULL
);

CREATE TABLE platform_projects (
	id         TEXT PRIMARY KEY,
	tenant_id  TEXT NOT NULL REFERENCES platform_tenants(id),
	name       TEXT NOT NULL,
	revision   INTEGER NOT NULL DEFAULT 1,
	created_at INTEGER NOT NULL,
	created_by TEXT NOT NULL
);
CREATE INDEX platform_projects_tenant ON platform_projects(tenant_id, id);

CREATE TABLE platform_environments (
	id         TEXT PRIMARY KEY,
	tenant_id  TEXT NOT NULL REFERENCES platform_tenants(id),
	project_id TEXT NOT NULL REFERENCES platform_projects(id),
	name       TEXT NOT NULL,
	revision   INTEGER NOT NULL DEFAULT 1,
	created_at INTEGER NOT NULL,
	created_by TEXT NOT NULL
);
CREATE INDEX platform_environments_project ON platform_environments(project_id, id);
CREATE INDEX platform_environments_tenant ON platform_environments(tenant_id, id);

-- Committed results of changes sent with an Idempotency-Key, keyed by the
-- principal, the scope (method and concrete canonical path) and the key.
-- request_hash is the SHA-256 of the canonical JSON body.
CREATE TABLE platform_idempotency (
	principal_id TEXT NOT NULL,
	scope        TEXT NOT NULL,
	key          TEXT NOT NULL,
	request_hash BLOB NOT NULL,
	status       INTEGER NOT NULL,
	body         BLOB NOT NULL,
	headers      TEXT NOT NULL,
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (principal_id, scope, key)
) WITHOUT ROWID;
CREATE INDEX platform_idempotency_created ON platform_idempotency(created_at);
