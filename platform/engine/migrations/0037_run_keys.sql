-- Integer run keys (docs/retention.md, "Platform runs"): a run's log lines
-- named it by its 36-character id, in every row and again in their index
-- (~72 bytes a line). A run now also has run_key, a small integer unique
-- among live rows, and its log lines name that. Every query maps the run's
-- id to its key once (platform_runs_key). Existing lines are converted
-- with their ids; the log's id sequence continues where it was.
ALTER TABLE platform_runs ADD COLUMN run_key INTEGER;
UPDATE platform_runs SET run_key = rowid;
CREATE UNIQUE INDEX platform_runs_key ON platform_runs(run_key);

CREATE TABLE platform_run_logs_keyed (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	run_key  INTEGER NOT NULL REFERENCES platform_runs(run_key),
	at       INTEGER NOT NULL,
	seq      INTEGER,
	level    TEXT NOT NULL,
	type     TEXT NOT NULL,
	node_id  TEXT,
	message  TEXT NOT NULL,
	data     TEXT,
	record   INTEGER CHECK (record >= 0)
);

INSERT INTO platform_run_logs_keyed(id, run_key, at, seq, level, type, node_id, message, data, record)
SELECT l.id, r.run_key, l.at, l.seq, l.level, l.type, l.node_id, l.message, l.data, l.record
FROM platform_run_logs l JOIN platform_runs r ON r.id = l.run_id ORDER BY l.id;

-- Ids of deleted lines are not given again: the sequence is kept.
INSERT INTO sqlite_sequence(name, seq)
SELECT 'platform_run_logs_keyed', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'platform_run_logs_keyed');
UPDATE sqlite_sequence SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'platform_run_logs'), 0))
WHERE name = 'platform_run_logs_keyed';

DROP TABLE platform_run_logs;
ALTER TABLE platform_run_logs_keyed RENAME TO platform_run_logs;
CREATE INDEX platform_run_logs_run ON platform_run_logs(run_key, id);
