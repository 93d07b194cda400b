-- The platform project a run is bound to; platform principals with run.read
-- there may read it (docs/factory-api.md, "Access"). Empty: owner-only.
ALTER TABLE factory_runs ADD COLUMN project_tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE factory_runs ADD COLUMN project_id TEXT NOT NULL DEFAULT '';
