-- Compact access decisions (docs/retention.md, "Platform access decisions";
-- docs/platform-api.md, "Access audit"). A decision repeated its context
-- as text: method, route template, principal, action, capability, scope,
-- outcome, reason and grant (~300 bytes), the same for every request of a
-- principal on a route. A context is now stored once, in
-- platform_access_contexts, and a decision is its time, request id,
-- resource and the context's key. platform_access_audit is a view with the
-- table's former columns, so what it answers does not change. Existing
-- decisions are converted with their seq.
CREATE TABLE platform_access_contexts (
	id             INTEGER PRIMARY KEY,
	method         TEXT NOT NULL,
	route          TEXT NOT NULL,
	principal_id   TEXT NOT NULL,
	action         TEXT NOT NULL,
	capability     TEXT NOT NULL,
	tenant_id      TEXT NOT NULL,
	project_id     TEXT NOT NULL,
	environment_id TEXT NOT NULL,
	allowed        INTEGER NOT NULL,
	reason         TEXT NOT NULL,
	grant_id       TEXT NOT NULL,
	UNIQUE (method, route, principal_id, action, capability, tenant_id, project_id, environment_id, allowed, reason, grant_id)
);

CREATE TABLE platform_access_decisions (
	seq         INTEGER PRIMARY KEY,
	at          INTEGER NOT NULL,
	request_id  TEXT NOT NULL,
	context_id  INTEGER NOT NULL REFERENCES platform_access_contexts(id),
	resource_id TEXT NOT NULL DEFAULT ''
);

INSERT INTO platform_access_contexts(method, route, principal_id, action, capability, tenant_id, project_id, environment_id, allowed, reason, grant_id)
SELECT DISTINCT method, route, principal_id, action, capability, tenant_id, project_id, environment_id, allowed, reason, grant_id
FROM platform_access_audit;

INSERT INTO platform_access_decisions(seq, at, request_id, context_id, resource_id)
SELECT a.seq, a.at, a.request_id, c.id, a.resource_id
FROM platform_access_audit a JOIN platform_access_contexts c
	ON c.method = a.method AND c.route = a.route AND c.principal_id = a.principal_id AND c.action = a.action
	AND c.capability = a.capability AND c.tenant_id = a.tenant_id AND c.project_id = a.project_id
	AND c.environment_id = a.environment_id AND c.allowed = a.allowed AND c.reason = a.reason AND c.grant_id = a.grant_id;

DROP TABLE platform_access_audit;

CREATE INDEX platform_access_decisions_request ON platform_access_decisions(request_id);
CREATE INDEX platform_access_decisions_at ON platform_access_decisions(at);

CREATE VIEW platform_access_audit AS
SELECT d.seq, d.at, d.request_id, c.method, c.route, c.principal_id, c.action, c.capability,
	c.tenant_id, c.project_id, c.environment_id, d.resource_id, c.allowed, c.reason, c.grant_id
FROM platform_access_decisions d JOIN platform_access_contexts c ON c.id = d.context_id;
