-- Workflow runs started through the bridge (POST /v1/bridge/workflow-runs)
-- and the jobs of workflow agent steps. The runs themselves (status,
-- input, output, error) belong to the platform: the bridge keeps only who
-- started which platform run, under which Idempotency-Key and request hash.

-- One row per workflow run a client started. request_hash is the SHA-256
-- of the canonical request {templateId, inputs}; a repeated key with the
-- same hash is the same run, with another hash a conflict. The row commits
-- in the transaction that creates the platform run.
CREATE TABLE bridge_workflow_runs (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	id              TEXT NOT NULL UNIQUE,
	client_id       TEXT NOT NULL,
	template_id     TEXT NOT NULL,
	idempotency_key TEXT,
	request_hash    BLOB NOT NULL,
	platform_run_id TEXT NOT NULL UNIQUE,
	created_at      TEXT NOT NULL
);
CREATE INDEX bridge_workflow_runs_client ON bridge_workflow_runs(client_id, seq);
CREATE UNIQUE INDEX bridge_workflow_runs_key ON bridge_workflow_runs(client_id, idempotency_key)
	WHERE idempotency_key IS NOT NULL;

-- The bridge job of each agent step instance, by the step's operation key
-- (stable across its attempts), so a step retried after a crash finds its
-- job instead of starting a second one. task_id is the attempt that last
-- started (or retried) the job.
CREATE TABLE bridge_workflow_agent_jobs (
	operation_key TEXT PRIMARY KEY,
	job_id        TEXT NOT NULL UNIQUE REFERENCES bridge_jobs(id),
	run_id        TEXT NOT NULL,
	task_id       TEXT NOT NULL,
	created_at    TEXT NOT NULL,
	updated_at    TEXT NOT NULL
);
