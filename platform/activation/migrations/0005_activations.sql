-- Activations (spec 2, "Environment level"): a published workflow version
-- bound to an environment, with input defaults and connection bindings.
-- Ids are canonical lowercase UUID strings; times are Unix milliseconds
-- (UTC); input_defaults and connection_bindings are canonical JSON objects.

-- An activation's binding never changes; only its lifecycle does (status,
-- revision and the retirement fields). revision counts lifecycle
-- revisions: 1 at creation, 2 once retired. At most one activation of a
-- workflow id is active per environment; retired ones are kept for reads
-- and exports and never deleted.
CREATE TABLE platform_activations (
	id                   TEXT PRIMARY KEY,
	tenant_id            TEXT NOT NULL REFERENCES platform_tenants(id),
	project_id           TEXT NOT NULL REFERENCES platform_projects(id),
	environment_id       TEXT NOT NULL REFERENCES platform_environments(id),
	published_version_id TEXT NOT NULL REFERENCES platform_definition_versions(id),
	workflow_id          TEXT NOT NULL,
	workflow_version     INTEGER NOT NULL CHECK (workflow_version > 0),
	digest               TEXT NOT NULL,
	name                 TEXT,
	input_defaults       TEXT NOT NULL,
	connection_bindings  TEXT NOT NULL,
	status               TEXT NOT NULL CHECK (status IN ('active', 'retired')),
	revision             INTEGER NOT NULL CHECK (revision > 0),
	created_at           INTEGER NOT NULL,
	created_by           TEXT NOT NULL,
	retired_at           INTEGER,
	retired_by           TEXT,
	retirement_reason    TEXT,
	CHECK ((status = 'active') = (retired_at IS NULL))
);
CREATE INDEX platform_activations_list ON platform_activations(environment_id, id);
CREATE UNIQUE INDEX platform_activations_active ON platform_activations(environment_id, workflow_id) WHERE status = 'active';

CREATE TRIGGER platform_activations_binding_fixed BEFORE UPDATE ON platform_activations
WHEN NEW.id IS NOT OLD.id OR NEW.tenant_id IS NOT OLD.tenant_id OR NEW.project_id IS NOT OLD.project_id
	OR NEW.environment_id IS NOT OLD.environment_id OR NEW.published_version_id IS NOT OLD.published_version_id
	OR NEW.workflow_id IS NOT OLD.workflow_id OR NEW.workflow_version IS NOT OLD.workflow_version
	OR NEW.digest IS NOT OLD.digest OR NEW.name IS NOT OLD.name OR NEW.input_defaults IS NOT OLD.input_defaults
	OR NEW.connection_bindings IS NOT OLD.connection_bindings OR NEW.created_at IS NOT OLD.created_at
	OR NEW.created_by IS NOT OLD.created_by OR OLD.status = 'retired'
BEGIN
	SELECT RAISE(ABORT, 'an activation binding never changes and a retired activation is final');
END;
CREATE TRIGGER platform_activations_no_delete BEFORE DELETE ON platform_activations
BEGIN
	SELECT RAISE(ABORT, 'activations are never deleted');
END;
