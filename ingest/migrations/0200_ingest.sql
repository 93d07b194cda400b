-- Webhook ingestion: the dead-letter index, processed-event records and the
-- idempotency store shared by every consumer of the process.

-- One row per event that reached the dead-letter topic, indexed from that
-- topic by a consumer. A later dead letter of the same event updates the row.
CREATE TABLE ingest_dlq (
    event_id     TEXT PRIMARY KEY,
    dlq_id       TEXT NOT NULL,            -- id of the latest dead letter
    provider     TEXT NOT NULL,
    stage        TEXT NOT NULL,            -- ingest | publish | process
    reason       TEXT NOT NULL,
    detail       TEXT NOT NULL,
    status       INTEGER NOT NULL,         -- HTTP status answered, 0 for process
    topic        TEXT NOT NULL,            -- intended topic, '' when unknown
    headers      TEXT NOT NULL,            -- JSON object: the envelope headers
    payload      BLOB,                     -- NULL when omitted
    payload_size INTEGER NOT NULL,
    received_at  TEXT NOT NULL,
    failed_at    TEXT NOT NULL,
    failures     INTEGER NOT NULL DEFAULT 1,
    replayed_at  TEXT,                     -- NULL until replayed since the last failure
    replays      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX ingest_dlq_failed ON ingest_dlq (failed_at DESC, event_id DESC);

-- The outcome of processing each published event.
CREATE TABLE ingest_events (
    event_id     TEXT PRIMARY KEY,
    provider     TEXT NOT NULL,
    delivery_id  TEXT NOT NULL,
    status       TEXT NOT NULL,            -- verified | unverified | duplicate | failed
    reason       TEXT NOT NULL,
    topic        TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    processed_at TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX ingest_events_processed ON ingest_events (processed_at);

-- Delivery ids seen per provider, until expires_at (Unix milliseconds).
CREATE TABLE ingest_idempotency (
    provider    TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    seen_at     TEXT NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (provider, delivery_id)
) WITHOUT ROWID;
CREATE INDEX ingest_idempotency_expiry ON ingest_idempotency (expires_at);
