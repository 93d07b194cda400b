-- platform_runs_env (environment_id, id) served no query the other indexes
-- do not: a run is read by its id (the primary key, then its environment
-- compared), listed by platform_runs_env_created (environment_id,
-- created_at, id), which also serves the environment's foreign key.
-- Dropping it saves ~90 bytes per run (docs/retention.md).
DROP INDEX platform_runs_env;
