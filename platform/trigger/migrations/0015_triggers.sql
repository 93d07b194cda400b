-- Signed webhook triggers (spec 2: POST /webhooks/{identifier}; the
-- management routes are the project's, see docs/platform-api.md,
-- "Webhook triggers"). A trigger is an immutable configuration revision:
-- replacing one creates a new id and disables the previous one
-- (replaced_by). Times are Unix milliseconds (UTC).
--
-- secret is the whsec_ signing secret sealed with the daemon's secret box
-- (associated data: the trigger id); it is shown once, at creation.
CREATE TABLE platform_triggers (
	id                TEXT PRIMARY KEY,
	tenant_id         TEXT NOT NULL REFERENCES platform_tenants(id),
	project_id        TEXT NOT NULL REFERENCES platform_projects(id),
	environment_id    TEXT NOT NULL REFERENCES platform_environments(id),
	revision          INTEGER NOT NULL,
	status            TEXT NOT NULL,
	name              TEXT NOT NULL,
	activation_id     TEXT NOT NULL,
	mapping           TEXT NOT NULL,
	headers           TEXT NOT NULL,
	tolerance_seconds INTEGER NOT NULL,
	secret            TEXT NOT NULL,
	principal_id      TEXT NOT NULL,
	replaces          TEXT,
	replaced_by       TEXT,
	created_at        INTEGER NOT NULL,
	disabled_at       INTEGER,
	disabled_by       TEXT
);
CREATE INDEX platform_triggers_env ON platform_triggers(environment_id, id);

-- Accepted deliveries: one run per (trigger, webhook-id), written in the
-- transaction that starts the run, so a replayed webhook-id starts nothing.
CREATE TABLE platform_trigger_deliveries (
	trigger_id  TEXT NOT NULL REFERENCES platform_triggers(id),
	webhook_id  TEXT NOT NULL,
	run_id      TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	PRIMARY KEY (trigger_id, webhook_id)
);
