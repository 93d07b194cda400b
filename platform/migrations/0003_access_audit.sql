-- Every access decision of the platform API, with the server-generated
-- request id (X-Platform-Request-ID): authentications (including refused
-- tokens and unlinked sign-ins), capability checks, delegations,
-- revocations and principal changes. Written in batches by one writer;
-- never holds tokens. Kept for platform.audit.retention.
CREATE TABLE platform_access_audit (
	seq            INTEGER PRIMARY KEY,
	at             INTEGER NOT NULL,
	request_id     TEXT NOT NULL,
	method         TEXT NOT NULL,
	route          TEXT NOT NULL,
	principal_id   TEXT NOT NULL DEFAULT '',
	action         TEXT NOT NULL,
	capability     TEXT NOT NULL DEFAULT '',
	tenant_id      TEXT NOT NULL DEFAULT '',
	project_id     TEXT NOT NULL DEFAULT '',
	environment_id TEXT NOT NULL DEFAULT '',
	resource_id    TEXT NOT NULL DEFAULT '',
	allowed        INTEGER NOT NULL,
	reason         TEXT NOT NULL,
	grant_id       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX platform_access_audit_request ON platform_access_audit(request_id);
CREATE INDEX platform_access_audit_at ON platform_access_audit(at);
