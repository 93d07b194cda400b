-- Outbox: run lifecycle events written in the transaction that changed the
-- run, then published to the broker (topic platform.runs) by the relay and
-- deleted. Delivery is at least once; event_id is stable across
-- republication so consumers deduplicate.
CREATE TABLE platform_outbox (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	event_id    TEXT NOT NULL UNIQUE,
	event_type  TEXT NOT NULL,
	run_id      TEXT NOT NULL,
	payload     TEXT NOT NULL,
	created_at  INTEGER NOT NULL
);
