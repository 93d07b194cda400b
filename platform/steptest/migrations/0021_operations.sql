-- Operations in an environment (spec 2, "Debug sessions and step tests",
-- "Generic rules"): test policies, step tests, draft test activations with
-- their signed listen routes and accepted test deliveries. Ids are
-- canonical lowercase UUID
-- strings; times are Unix milliseconds (UTC).

-- The test policy of an environment; an environment without a row is
-- disabled at revision 0.
CREATE TABLE platform_test_policies (
	environment_id TEXT PRIMARY KEY REFERENCES platform_environments(id),
	test_calls     TEXT NOT NULL CHECK (test_calls IN ('disabled', 'read_only', 'all')),
	revision       INTEGER NOT NULL CHECK (revision > 0),
	updated_at     INTEGER NOT NULL,
	updated_by     TEXT NOT NULL
);

-- A step test: one step of a draft revision run as a test run. ended is
-- the status the step test itself gave its run (cancelled, timed_out) or
-- the run's final status once the expiry scan saw it end; NULL while live.
CREATE TABLE platform_step_tests (
	id             TEXT PRIMARY KEY,
	tenant_id      TEXT NOT NULL REFERENCES platform_tenants(id),
	project_id     TEXT NOT NULL REFERENCES platform_projects(id),
	environment_id TEXT NOT NULL REFERENCES platform_environments(id),
	run_id         TEXT NOT NULL REFERENCES platform_runs(id),
	activation_id  TEXT NOT NULL REFERENCES platform_activations(id),
	draft_id       TEXT NOT NULL,
	draft_revision INTEGER NOT NULL CHECK (draft_revision > 0),
	step_id        TEXT NOT NULL,
	kind           TEXT NOT NULL,
	side_effect    TEXT NOT NULL,
	options        TEXT NOT NULL,
	created_by     TEXT NOT NULL,
	created_at     INTEGER NOT NULL,
	expires_at     INTEGER NOT NULL,
	ended          TEXT,
	ended_at       INTEGER
);
CREATE INDEX platform_step_tests_env ON platform_step_tests(environment_id, created_by, id);
CREATE INDEX platform_step_tests_live ON platform_step_tests(expires_at) WHERE ended IS NULL;

-- A draft test activation: a test activation of a draft revision until
-- expires_at. ended is deleted or expired once its routes are cleaned up.
CREATE TABLE platform_test_activations (
	id              TEXT PRIMARY KEY,
	tenant_id       TEXT NOT NULL REFERENCES platform_tenants(id),
	project_id      TEXT NOT NULL REFERENCES platform_projects(id),
	environment_id  TEXT NOT NULL REFERENCES platform_environments(id),
	activation_id   TEXT NOT NULL REFERENCES platform_activations(id),
	draft_id        TEXT NOT NULL,
	draft_revision  INTEGER NOT NULL CHECK (draft_revision > 0),
	artifact_digest TEXT NOT NULL,
	side_effect     TEXT NOT NULL,
	created_by      TEXT NOT NULL,
	created_at      INTEGER NOT NULL,
	expires_at      INTEGER NOT NULL,
	ended           TEXT CHECK (ended IN ('deleted', 'expired')),
	ended_at        INTEGER
);
CREATE INDEX platform_test_activations_live ON platform_test_activations(expires_at) WHERE ended IS NULL;

-- Signed listen routes of test activations (POST /test-webhooks/{id}):
-- the HMAC key is sealed with the secret box. Rows go with the test
-- activation's end.
CREATE TABLE platform_test_listens (
	id                 TEXT PRIMARY KEY,
	test_activation_id TEXT NOT NULL REFERENCES platform_test_activations(id),
	sealed_key         BLOB NOT NULL,
	max_body_bytes     INTEGER NOT NULL,
	tolerance_seconds  INTEGER NOT NULL,
	created_at         INTEGER NOT NULL
);
CREATE INDEX platform_test_listens_activation ON platform_test_listens(test_activation_id);

-- Accepted test deliveries by listen route and webhook-id: a replayed id
-- answers the run it started.
CREATE TABLE platform_test_deliveries (
	listen_id  TEXT NOT NULL,
	webhook_id TEXT NOT NULL,
	run_id     TEXT NOT NULL REFERENCES platform_runs(id),
	at         INTEGER NOT NULL,
	PRIMARY KEY (listen_id, webhook_id)
);

