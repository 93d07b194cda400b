-- Answerable items of step tests (docs/platform-api.md, "Step tests and
-- test activations"): a confirm item holds an agent's call of a
-- side-effecting real tool until the creator confirms it, a review item
-- holds an agent's answer until the creator reviews it, a person item
-- records the creator's answer to a human task of the run. status is
-- pending until answered (confirmed or declined), once. detail is the
-- item's JSON shown in the pending list (tool, side effect and the redacted
-- input of a call; the redacted output of an answer).
CREATE TABLE platform_step_test_items (
	id           TEXT PRIMARY KEY,
	step_test_id TEXT NOT NULL REFERENCES platform_step_tests(id),
	kind         TEXT NOT NULL CHECK (kind IN ('confirm', 'review', 'person')),
	node_id      TEXT NOT NULL,
	instance_key TEXT NOT NULL,
	task_id      TEXT NOT NULL,
	detail       TEXT NOT NULL,
	status       TEXT NOT NULL CHECK (status IN ('pending', 'confirmed', 'declined')),
	created_at   INTEGER NOT NULL,
	answered_at  INTEGER,
	answered_by  TEXT,
	UNIQUE (step_test_id, instance_key)
);

-- The gate finds a test run's step test by its run.
CREATE INDEX platform_step_tests_run ON platform_step_tests(run_id);
