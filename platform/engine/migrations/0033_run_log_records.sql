-- Log lines that repeat a history record (docs/retention.md, "Platform
-- runs"): every step_started, step_completed, ... line's data is, byte for
-- byte, one of the records its event already stores. Such a line keeps
-- record, the index of that record in platform_run_events.records of the
-- event (run_id, seq), and no data; reading the log takes the record from
-- the event. Lines written before are converted here when their data is
-- exactly one of their event's records; the others keep their data.
ALTER TABLE platform_run_logs ADD COLUMN record INTEGER CHECK (record >= 0);

UPDATE platform_run_logs SET record = (
	SELECT CAST(j.key AS INTEGER)
	FROM platform_run_events e,
	     json_each(CASE WHEN json_valid(e.records) THEN e.records ELSE '[]' END) j
	WHERE e.run_id = platform_run_logs.run_id AND e.seq = platform_run_logs.seq
	  AND j.type = 'object' AND j.value = platform_run_logs.data
	ORDER BY j.key LIMIT 1)
WHERE seq IS NOT NULL AND data IS NOT NULL;

UPDATE platform_run_logs SET data = NULL WHERE record IS NOT NULL;
