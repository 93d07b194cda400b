-- Provider sources and receipts (spec 2, "Provider sources and receipts",
-- the Provider receipt state table; docs/platform-api.md, "Connections"
-- and "Provider sources"). Times are Unix milliseconds (UTC).
--
-- A connection is a chain of immutable revisions (connection_id groups
-- them; each revision has its own id). secrets is the JSON object of the
-- provider's secrets sealed with the daemon's secret box (associated data:
-- the revision id); it is never shown after creation.
CREATE TABLE platform_connections (
	id             TEXT PRIMARY KEY,
	connection_id  TEXT NOT NULL,
	revision       INTEGER NOT NULL,
	tenant_id      TEXT NOT NULL REFERENCES platform_tenants(id),
	project_id     TEXT NOT NULL REFERENCES platform_projects(id),
	environment_id TEXT NOT NULL REFERENCES platform_environments(id),
	name           TEXT NOT NULL,
	provider       TEXT NOT NULL,
	config         TEXT NOT NULL,
	secret_keys    TEXT NOT NULL,
	secrets        TEXT NOT NULL,
	principal_id   TEXT NOT NULL,
	created_at     INTEGER NOT NULL,
	UNIQUE (connection_id, revision)
);
CREATE INDEX platform_connections_env ON platform_connections(environment_id, connection_id, revision);

-- A provider source binds one connection revision (binding_id) to a run
-- start or a signal. disabled is irreversible for the id.
CREATE TABLE platform_provider_sources (
	id                     TEXT PRIMARY KEY,
	tenant_id              TEXT NOT NULL REFERENCES platform_tenants(id),
	project_id             TEXT NOT NULL REFERENCES platform_projects(id),
	environment_id         TEXT NOT NULL REFERENCES platform_environments(id),
	name                   TEXT NOT NULL,
	provider               TEXT NOT NULL,
	package                TEXT NOT NULL,
	package_version        TEXT NOT NULL,
	adapter_version        TEXT NOT NULL,
	schema_digest          TEXT NOT NULL,
	connection_revision_id TEXT NOT NULL REFERENCES platform_connections(id),
	policy                 TEXT NOT NULL,
	kind                   TEXT NOT NULL,
	activation_id          TEXT,
	run_id                 TEXT,
	signal                 TEXT,
	mapping                TEXT NOT NULL,
	binding_id             TEXT NOT NULL UNIQUE,
	principal_id           TEXT NOT NULL,
	disabled               INTEGER NOT NULL DEFAULT 0,
	created_at             INTEGER NOT NULL,
	disabled_at            INTEGER,
	disabled_by            TEXT
);
CREATE INDEX platform_provider_sources_env ON platform_provider_sources(environment_id, id);

-- Receipts: one per event identity (source, kind, provider event id),
-- written by the admission commit before the provider is acknowledged.
-- payload is the normalized event sealed with the secret box (associated
-- data: the receipt id), never shown; payload_digest (SHA-256 of it)
-- tells a provider's retry of the same event from a conflicting one.
CREATE TABLE platform_provider_receipts (
	id              TEXT PRIMARY KEY,
	source_id       TEXT NOT NULL REFERENCES platform_provider_sources(id),
	environment_id  TEXT NOT NULL,
	event_kind      TEXT NOT NULL,
	event_id        TEXT NOT NULL,
	account_id      TEXT NOT NULL,
	payload         TEXT NOT NULL,
	payload_digest  TEXT NOT NULL,
	status          TEXT NOT NULL,
	reason          TEXT,
	attempts        INTEGER NOT NULL DEFAULT 0,
	received_at     INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	next_attempt_at INTEGER,
	dispatched_at   INTEGER,
	run_id          TEXT,
	signal_id       TEXT,
	UNIQUE (source_id, event_kind, event_id)
);
CREATE INDEX platform_provider_receipts_env ON platform_provider_receipts(environment_id, id);
CREATE INDEX platform_provider_receipts_due ON platform_provider_receipts(next_attempt_at) WHERE status = 'pending';
