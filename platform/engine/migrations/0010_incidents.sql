-- Incidents (spec 2, "Runs, incidents, schedules"). An incident lives in
-- its run's kernel state; platform_run_incidents indexes the incidents of
-- each environment (rewritten with the run's state when an incident opens
-- or closes) so that E/incidents and E/incidents/{incident}/resolve find
-- the run. Incident ids are UUIDs derived from the run id, unique across
-- runs. Times are Unix milliseconds (UTC).
CREATE TABLE platform_run_incidents (
	incident_id    TEXT PRIMARY KEY,
	run_id         TEXT NOT NULL REFERENCES platform_runs(id),
	environment_id TEXT NOT NULL REFERENCES platform_environments(id),
	status         TEXT NOT NULL,
	opened_at      INTEGER NOT NULL
);
CREATE INDEX platform_run_incidents_env ON platform_run_incidents(environment_id, incident_id);
CREATE INDEX platform_run_incidents_run ON platform_run_incidents(run_id);

-- Resolution receipts: one per operator decision (receipt_id), written in
-- the transaction that accepts the resolution. request_hash covers the
-- incident, the If-Match revision and the canonical body; a replay by the
-- same principal with the same hash answers body again.
CREATE TABLE platform_incident_receipts (
	receipt_id   TEXT PRIMARY KEY,
	incident_id  TEXT NOT NULL REFERENCES platform_run_incidents(incident_id),
	principal_id TEXT NOT NULL,
	request_hash BLOB NOT NULL,
	revision     INTEGER NOT NULL,
	body         TEXT NOT NULL,
	created_at   INTEGER NOT NULL
);
