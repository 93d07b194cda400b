-- Integer run keys for events (docs/retention.md, "Platform runs"): an
-- accepted event named its run by the run's 36-character id, in the row
-- and in its (run_id, seq) key. It now names the run's run_key
-- (0037_run_keys); every query maps the run's id to its key once.
-- Existing events are converted as stored; they stay append-only while
-- their run is not archived.
CREATE TABLE platform_run_events_keyed (
	run_key INTEGER NOT NULL REFERENCES platform_runs(run_key),
	seq     INTEGER NOT NULL CHECK (seq > 0),
	kind    TEXT NOT NULL,
	payload TEXT NOT NULL,
	records TEXT NOT NULL,
	at      INTEGER NOT NULL,
	PRIMARY KEY (run_key, seq)
);

INSERT INTO platform_run_events_keyed(run_key, seq, kind, payload, records, at)
SELECT r.run_key, e.seq, e.kind, e.payload, e.records, e.at
FROM platform_run_events e JOIN platform_runs r ON r.id = e.run_id ORDER BY r.run_key, e.seq;

DROP TABLE platform_run_events;
ALTER TABLE platform_run_events_keyed RENAME TO platform_run_events;

CREATE TRIGGER platform_run_events_no_update BEFORE UPDATE ON platform_run_events
BEGIN
	SELECT RAISE(ABORT, 'run events are append-only');
END;
CREATE TRIGGER platform_run_events_no_delete BEFORE DELETE ON platform_run_events
WHEN NOT EXISTS (SELECT 1 FROM platform_runs r JOIN platform_run_archives a ON a.run_id = r.id WHERE r.run_key = OLD.run_key)
BEGIN
	SELECT RAISE(ABORT, 'run events are append-only');
END;
