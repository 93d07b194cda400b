-- Archived runs (docs/platform-api.md, "Archiving, restoring and purging
-- runs"; docs/retention.md): an ended run's events and log lines packed
-- (zstd, store.Pack) into one row, so a run kept for the record costs a
-- fraction of its live history. Restoring unpacks them into
-- platform_run_events and platform_run_logs with their sequence numbers
-- and log ids; purging deletes the run with everything that refers to it.
ALTER TABLE platform_runs ADD COLUMN archived_at INTEGER;
-- The automatic policy's queues: runs not archived by the time of their
-- last event, archived runs by their archive time (both partial, so an
-- archived run leaves the first and a live run costs nothing in the second).
CREATE INDEX platform_runs_unarchived ON platform_runs(updated_at) WHERE archived_at IS NULL;
CREATE INDEX platform_runs_archived ON platform_runs(archived_at) WHERE archived_at IS NOT NULL;

CREATE TABLE platform_run_archives (
	run_id      TEXT PRIMARY KEY REFERENCES platform_runs(id),
	-- history: {"e": events, "l": log lines}, the rows' stored text kept
	-- as is (sealed values stay sealed), packed in one zstd frame.
	history     BLOB NOT NULL,
	event_count INTEGER NOT NULL,
	log_count   INTEGER NOT NULL,
	archived_at INTEGER NOT NULL
);

-- Events stay append-only while a run is live: only the archiving (or
-- purging) of an archived run may delete them.
DROP TRIGGER platform_run_events_no_delete;
CREATE TRIGGER platform_run_events_no_delete BEFORE DELETE ON platform_run_events
WHEN NOT EXISTS (SELECT 1 FROM platform_run_archives WHERE run_id = OLD.run_id)
BEGIN
	SELECT RAISE(ABORT, 'run events are append-only');
END;
