-- Outbound callback service (spec 3). Times are Unix milliseconds (UTC) so
-- that they sort and compare as integers; ids are UUID strings.

CREATE TABLE callback_authorized_domains (
	id                 TEXT PRIMARY KEY,
	domain             TEXT NOT NULL UNIQUE,
	include_subdomains INTEGER NOT NULL DEFAULT 0,
	description        TEXT NOT NULL DEFAULT '',
	created_at         INTEGER NOT NULL,
	updated_at         INTEGER NOT NULL
);

CREATE TABLE callback_configurations (
	id                       TEXT PRIMARY KEY,
	name                     TEXT NOT NULL UNIQUE,
	url                      TEXT NOT NULL,
	host                     TEXT NOT NULL,
	http_method              TEXT NOT NULL,
	status                   TEXT NOT NULL,
	status_reason            TEXT NOT NULL DEFAULT '',
	subscribed_event_types   TEXT NOT NULL, -- JSON array of strings
	signature_enabled        INTEGER NOT NULL,
	signature_scheme         TEXT NOT NULL,
	signature_header         TEXT NOT NULL DEFAULT '',
	secret_sealed            TEXT NOT NULL DEFAULT '',
	previous_secret_sealed   TEXT NOT NULL DEFAULT '',
	previous_secret_until    INTEGER NOT NULL DEFAULT 0,
	secret_updated_at        INTEGER NOT NULL DEFAULT 0,
	max_retries              INTEGER,
	retry_delay_ms           INTEGER,
	timeout_ms               INTEGER,
	failure_threshold        INTEGER,
	version                  INTEGER NOT NULL DEFAULT 1,
	created_at               INTEGER NOT NULL,
	updated_at               INTEGER NOT NULL
);

CREATE TABLE callback_event_subscriptions (
	id                    TEXT PRIMARY KEY,
	name                  TEXT NOT NULL UNIQUE,
	messaging_system_type TEXT NOT NULL,
	topic_or_queue        TEXT NOT NULL DEFAULT '',
	consumer_group_id     TEXT NOT NULL,
	event_type_patterns   TEXT NOT NULL, -- JSON array of strings
	active                INTEGER NOT NULL,
	active_since          INTEGER NOT NULL, -- Unix MICROseconds; events published earlier are not delivered
	created_at            INTEGER NOT NULL,
	updated_at            INTEGER NOT NULL
);

-- Events the service consumed (or was handed): the payload of every
-- delivery, and the source of replays. Executions refer to an event by its
-- sequence number: indexes on a random UUID would dirty a random page per
-- row, which is what limits insert throughput; the id is indexed once, here.
CREATE TABLE callback_events (
	seq         INTEGER PRIMARY KEY,
	id          TEXT NOT NULL UNIQUE,
	event_type  TEXT NOT NULL,
	topic       TEXT NOT NULL DEFAULT '',
	payload     BLOB NOT NULL,
	received_at INTEGER NOT NULL
);
CREATE INDEX callback_events_received ON callback_events(received_at);

-- One row per delivery attempt. A PENDING or HELD_CIRCUIT_OPEN row is an
-- attempt still to be made at scheduled_at: these rows are the persisted
-- retry queue that survives a restart.
CREATE TABLE callback_executions (
	id                   TEXT PRIMARY KEY,
	delivery_id          TEXT NOT NULL,
	configuration_id     TEXT NOT NULL,
	configuration_name   TEXT NOT NULL,
	subscription_id      TEXT NOT NULL DEFAULT '',
	event_seq            INTEGER NOT NULL,
	event_id             TEXT NOT NULL,
	event_type           TEXT NOT NULL,
	attempt              INTEGER NOT NULL,
	max_attempts         INTEGER NOT NULL,
	state                TEXT NOT NULL,
	trigger              TEXT NOT NULL,
	retry_of             TEXT NOT NULL DEFAULT '',
	scheduled_at         INTEGER NOT NULL,
	started_at           INTEGER NOT NULL DEFAULT 0,
	finished_at          INTEGER NOT NULL DEFAULT 0,
	duration_ms          INTEGER NOT NULL DEFAULT 0,
	request_method       TEXT NOT NULL DEFAULT '',
	request_url          TEXT NOT NULL DEFAULT '',
	request_headers      TEXT NOT NULL DEFAULT '', -- JSON object
	request_body_bytes   INTEGER NOT NULL DEFAULT 0,
	response_status      INTEGER NOT NULL DEFAULT 0,
	response_excerpt     TEXT NOT NULL DEFAULT '',
	response_truncated   INTEGER NOT NULL DEFAULT 0,
	error_code           TEXT NOT NULL DEFAULT '',
	error_message        TEXT NOT NULL DEFAULT '',
	next_attempt_at      INTEGER NOT NULL DEFAULT 0,
	created_at           INTEGER NOT NULL,
	updated_at           INTEGER NOT NULL
);
CREATE INDEX callback_executions_open ON callback_executions(state, scheduled_at)
	WHERE state IN ('PENDING', 'HELD_CIRCUIT_OPEN');
CREATE INDEX callback_executions_config ON callback_executions(configuration_id, created_at);
CREATE INDEX callback_executions_event ON callback_executions(event_seq);
CREATE INDEX callback_executions_created ON callback_executions(created_at, id);
-- A broker message delivered twice (or an event dispatched twice) must not
-- start a second delivery; retries and replays are deliberate and not bound.
CREATE UNIQUE INDEX callback_executions_first_attempt
	ON callback_executions(event_seq, configuration_id)
	WHERE trigger IN ('EVENT', 'DISPATCH') AND attempt = 1;
