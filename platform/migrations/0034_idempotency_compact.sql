-- Compact idempotency records (docs/retention.md, "Idempotency records"):
-- the primary key is a 16-byte hash of the principal, the scope and the
-- key (httpx.IdempotencyID) instead of their text, which the created_at
-- index repeated; new answers are stored with their scope's path and
-- principal replaced by one-byte references. Existing records are kept,
-- rekeyed; their answers stay as stored and replay as before.
CREATE TABLE platform_idempotency_compact (
	id           BLOB PRIMARY KEY,
	key          TEXT NOT NULL,
	request_hash BLOB NOT NULL,
	status       INTEGER NOT NULL,
	body         BLOB NOT NULL,
	headers      TEXT NOT NULL,
	created_at   INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO platform_idempotency_compact(id, key, request_hash, status, body, headers, created_at)
SELECT substr(bridge_sha256(principal_id || char(10) || scope || char(10) || key || char(10)), 1, 16),
	key, request_hash, status, body, headers, created_at
FROM platform_idempotency;

DROP TABLE platform_idempotency;
ALTER TABLE platform_idempotency_compact RENAME TO platform_idempotency;
CREATE INDEX platform_idempotency_created ON platform_idempotency(created_at);
