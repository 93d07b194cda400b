-- An agent task may take several turns: a turn refused by a provider rate
-- limit is retried automatically (docs/factory-api.md, "Rate limits").
CREATE TABLE factory_turns_v2 (
	run_id      TEXT NOT NULL REFERENCES factory_runs(id),
	task_idx    INTEGER NOT NULL,
	turn        INTEGER NOT NULL, -- 1 for the first turn of the task
	provider    TEXT NOT NULL,
	exit_code   INTEGER NOT NULL,
	is_error    INTEGER NOT NULL,
	failure     TEXT NOT NULL DEFAULT '',
	text        TEXT NOT NULL DEFAULT '',
	stderr      TEXT NOT NULL DEFAULT '',
	events      TEXT NOT NULL DEFAULT '[]',
	started_at  INTEGER NOT NULL,
	duration_ms INTEGER NOT NULL,
	PRIMARY KEY (run_id, task_idx, turn)
);
INSERT INTO factory_turns_v2 (run_id, task_idx, turn, provider, exit_code, is_error, failure, text, stderr, events, started_at, duration_ms)
	SELECT run_id, task_idx, 1, provider, exit_code, is_error, failure, text, stderr, events, started_at, duration_ms FROM factory_turns;
DROP TABLE factory_turns;
ALTER TABLE factory_turns_v2 RENAME TO factory_turns;
