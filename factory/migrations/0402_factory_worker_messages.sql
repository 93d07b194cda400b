-- Clarification requests of workers (agent turns that ask a question) and the
-- operator's answers (docs/factory-api.md, "Worker questions").
CREATE TABLE factory_messages (
	run_id   TEXT NOT NULL REFERENCES factory_runs(id),
	seq      INTEGER NOT NULL,
	task_idx INTEGER NOT NULL,
	kind     TEXT NOT NULL, -- question, answer
	text     TEXT NOT NULL,
	at       INTEGER NOT NULL,
	PRIMARY KEY (run_id, seq)
);
