-- Principals and their scoped grants (spec 2, "Authentication"). A
-- principal is linked to a sign-in by (issuer, subject) of its verified
-- tokens; a sign-in without a principal is refused (401), and a principal
-- without a current grant is refused (403). Grants are never deleted:
-- revocation sets revoked_at, so history stays readable.

CREATE TABLE platform_principals (
	id         TEXT PRIMARY KEY,
	kind       TEXT NOT NULL CHECK (kind IN ('human', 'application', 'worker')),
	issuer     TEXT NOT NULL,
	subject    TEXT NOT NULL,
	name       TEXT NOT NULL DEFAULT '',
	disabled   INTEGER NOT NULL DEFAULT 0,
	revision   INTEGER NOT NULL DEFAULT 1,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	created_by TEXT NOT NULL,
	UNIQUE (issuer, subject)
);

-- Scope columns are '' for wider levels: all four empty is the platform
-- (root) scope. role and capabilities (comma-separated) are checked by
-- platform/auth when created and again, failing closed, when used.
CREATE TABLE platform_grants (
	id             TEXT PRIMARY KEY,
	principal_id   TEXT NOT NULL REFERENCES platform_principals(id),
	tenant_id      TEXT NOT NULL DEFAULT '',
	project_id     TEXT NOT NULL DEFAULT '',
	environment_id TEXT NOT NULL DEFAULT '',
	resource_id    TEXT NOT NULL DEFAULT '',
	role           TEXT NOT NULL DEFAULT '',
	capabilities   TEXT NOT NULL DEFAULT '',
	granted_by     TEXT NOT NULL,
	created_at     INTEGER NOT NULL,
	revoked_at     INTEGER,
	revoked_by     TEXT
);
CREATE INDEX platform_grants_principal ON platform_grants(principal_id, id);
CREATE INDEX platform_grants_tenant ON platform_grants(tenant_id, id);
