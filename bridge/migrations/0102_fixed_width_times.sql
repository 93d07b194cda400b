-- Times in bridge tables take one fixed-width form: UTC RFC 3339 with
-- exactly nine fraction digits (2026-01-02T15:04:05.120000000Z). Earlier
-- rows dropped trailing zeros (…05.12Z), so their text order was not time
-- order: the scheduler picks queued jobs by queued_at, and …05.12Z sorted
-- before …05.1Z. Every time column is rewritten to the fixed form; a
-- value already in it (30 characters) or not ending in Z is left alone.

UPDATE bridge_clients SET created_at = CASE WHEN length(created_at) = 20 THEN substr(created_at, 1, 19) || '.000000000Z'
		ELSE substr(created_at, 1, 20) || substr(substr(created_at, 21, length(created_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(created_at) BETWEEN 20 AND 29 AND substr(created_at, -1) = 'Z';

UPDATE bridge_clients SET revoked_at = CASE WHEN length(revoked_at) = 20 THEN substr(revoked_at, 1, 19) || '.000000000Z'
		ELSE substr(revoked_at, 1, 20) || substr(substr(revoked_at, 21, length(revoked_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(revoked_at) BETWEEN 20 AND 29 AND substr(revoked_at, -1) = 'Z';

UPDATE bridge_tokens SET created_at = CASE WHEN length(created_at) = 20 THEN substr(created_at, 1, 19) || '.000000000Z'
		ELSE substr(created_at, 1, 20) || substr(substr(created_at, 21, length(created_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(created_at) BETWEEN 20 AND 29 AND substr(created_at, -1) = 'Z';

UPDATE bridge_tokens SET revoked_at = CASE WHEN length(revoked_at) = 20 THEN substr(revoked_at, 1, 19) || '.000000000Z'
		ELSE substr(revoked_at, 1, 20) || substr(substr(revoked_at, 21, length(revoked_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(revoked_at) BETWEEN 20 AND 29 AND substr(revoked_at, -1) = 'Z';

UPDATE bridge_jobs SET created_at = CASE WHEN length(created_at) = 20 THEN substr(created_at, 1, 19) || '.000000000Z'
		ELSE substr(created_at, 1, 20) || substr(substr(created_at, 21, length(created_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(created_at) BETWEEN 20 AND 29 AND substr(created_at, -1) = 'Z';

UPDATE bridge_jobs SET updated_at = CASE WHEN length(updated_at) = 20 THEN substr(updated_at, 1, 19) || '.000000000Z'
		ELSE substr(updated_at, 1, 20) || substr(substr(updated_at, 21, length(updated_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(updated_at) BETWEEN 20 AND 29 AND substr(updated_at, -1) = 'Z';

UPDATE bridge_jobs SET started_at = CASE WHEN length(started_at) = 20 THEN substr(started_at, 1, 19) || '.000000000Z'
		ELSE substr(started_at, 1, 20) || substr(substr(started_at, 21, length(started_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(started_at) BETWEEN 20 AND 29 AND substr(started_at, -1) = 'Z';

UPDATE bridge_jobs SET finished_at = CASE WHEN length(finished_at) = 20 THEN substr(finished_at, 1, 19) || '.000000000Z'
		ELSE substr(finished_at, 1, 20) || substr(substr(finished_at, 21, length(finished_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(finished_at) BETWEEN 20 AND 29 AND substr(finished_at, -1) = 'Z';

UPDATE bridge_jobs SET queued_at = CASE WHEN length(queued_at) = 20 THEN substr(queued_at, 1, 19) || '.000000000Z'
		ELSE substr(queued_at, 1, 20) || substr(substr(queued_at, 21, length(queued_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(queued_at) BETWEEN 20 AND 29 AND substr(queued_at, -1) = 'Z';

UPDATE bridge_attempts SET created_at = CASE WHEN length(created_at) = 20 THEN substr(created_at, 1, 19) || '.000000000Z'
		ELSE substr(created_at, 1, 20) || substr(substr(created_at, 21, length(created_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(created_at) BETWEEN 20 AND 29 AND substr(created_at, -1) = 'Z';

UPDATE bridge_attempts SET started_at = CASE WHEN length(started_at) = 20 THEN substr(started_at, 1, 19) || '.000000000Z'
		ELSE substr(started_at, 1, 20) || substr(substr(started_at, 21, length(started_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(started_at) BETWEEN 20 AND 29 AND substr(started_at, -1) = 'Z';

UPDATE bridge_attempts SET finished_at = CASE WHEN length(finished_at) = 20 THEN substr(finished_at, 1, 19) || '.000000000Z'
		ELSE substr(finished_at, 1, 20) || substr(substr(finished_at, 21, length(finished_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(finished_at) BETWEEN 20 AND 29 AND substr(finished_at, -1) = 'Z';

UPDATE bridge_messages SET created_at = CASE WHEN length(created_at) = 20 THEN substr(created_at, 1, 19) || '.000000000Z'
		ELSE substr(created_at, 1, 20) || substr(substr(created_at, 21, length(created_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(created_at) BETWEEN 20 AND 29 AND substr(created_at, -1) = 'Z';

UPDATE bridge_audit SET created_at = CASE WHEN length(created_at) = 20 THEN substr(created_at, 1, 19) || '.000000000Z'
		ELSE substr(created_at, 1, 20) || substr(substr(created_at, 21, length(created_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(created_at) BETWEEN 20 AND 29 AND substr(created_at, -1) = 'Z';

UPDATE bridge_tools SET started_at = CASE WHEN length(started_at) = 20 THEN substr(started_at, 1, 19) || '.000000000Z'
		ELSE substr(started_at, 1, 20) || substr(substr(started_at, 21, length(started_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(started_at) BETWEEN 20 AND 29 AND substr(started_at, -1) = 'Z';

UPDATE bridge_tools SET finished_at = CASE WHEN length(finished_at) = 20 THEN substr(finished_at, 1, 19) || '.000000000Z'
		ELSE substr(finished_at, 1, 20) || substr(substr(finished_at, 21, length(finished_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(finished_at) BETWEEN 20 AND 29 AND substr(finished_at, -1) = 'Z';

UPDATE bridge_idempotency SET created_at = CASE WHEN length(created_at) = 20 THEN substr(created_at, 1, 19) || '.000000000Z'
		ELSE substr(created_at, 1, 20) || substr(substr(created_at, 21, length(created_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(created_at) BETWEEN 20 AND 29 AND substr(created_at, -1) = 'Z';

UPDATE bridge_workflow_runs SET created_at = CASE WHEN length(created_at) = 20 THEN substr(created_at, 1, 19) || '.000000000Z'
		ELSE substr(created_at, 1, 20) || substr(substr(created_at, 21, length(created_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(created_at) BETWEEN 20 AND 29 AND substr(created_at, -1) = 'Z';

UPDATE bridge_workflow_agent_jobs SET created_at = CASE WHEN length(created_at) = 20 THEN substr(created_at, 1, 19) || '.000000000Z'
		ELSE substr(created_at, 1, 20) || substr(substr(created_at, 21, length(created_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(created_at) BETWEEN 20 AND 29 AND substr(created_at, -1) = 'Z';

UPDATE bridge_workflow_agent_jobs SET updated_at = CASE WHEN length(updated_at) = 20 THEN substr(updated_at, 1, 19) || '.000000000Z'
		ELSE substr(updated_at, 1, 20) || substr(substr(updated_at, 21, length(updated_at) - 21) || '000000000', 1, 9) || 'Z' END
	WHERE length(updated_at) BETWEEN 20 AND 29 AND substr(updated_at, -1) = 'Z';
