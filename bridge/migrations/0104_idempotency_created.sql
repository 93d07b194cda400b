-- The retention prune deletes idempotency records by age
-- (bridge.idempotency-retention, docs/bridge-api.md "Retention").
CREATE INDEX bridge_idempotency_created ON bridge_idempotency(created_at);
