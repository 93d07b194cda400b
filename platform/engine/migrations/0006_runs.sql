-- Runs (spec 2, "Runs, incidents, schedules"): durable runs of activated
-- workflows driven by the deterministic kernel (platform/kernel). Ids are
-- canonical lowercase UUID strings; times are Unix milliseconds (UTC);
-- state and payload are JSON. A run's state is the kernel state after its
-- last accepted event; seq is that event's sequence number.
CREATE TABLE platform_runs (
	id              TEXT PRIMARY KEY,
	tenant_id       TEXT NOT NULL REFERENCES platform_tenants(id),
	project_id      TEXT NOT NULL REFERENCES platform_projects(id),
	environment_id  TEXT NOT NULL REFERENCES platform_environments(id),
	activation_id   TEXT NOT NULL REFERENCES platform_activations(id),
	parent_run_id   TEXT REFERENCES platform_runs(id),
	status          TEXT NOT NULL,
	state           TEXT NOT NULL,
	seq             INTEGER NOT NULL CHECK (seq > 0),
	-- needs_work is 1 while the engine has inline work for the run (a
	-- built-in task to complete or a continue to feed); it is written with
	-- the state, so work survives a restart.
	needs_work      INTEGER NOT NULL DEFAULT 0,
	correlation_key TEXT,
	business_key    TEXT,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	created_by      TEXT NOT NULL
);
CREATE INDEX platform_runs_env ON platform_runs(environment_id, id);
CREATE INDEX platform_runs_work ON platform_runs(needs_work) WHERE needs_work = 1;

-- Accepted events, append-only: payload is the kernel event, records the
-- history facts the step produced.
CREATE TABLE platform_run_events (
	run_id  TEXT NOT NULL REFERENCES platform_runs(id),
	seq     INTEGER NOT NULL CHECK (seq > 0),
	kind    TEXT NOT NULL,
	payload TEXT NOT NULL,
	records TEXT NOT NULL,
	at      INTEGER NOT NULL,
	PRIMARY KEY (run_id, seq)
);
CREATE TRIGGER platform_run_events_no_update BEFORE UPDATE ON platform_run_events
BEGIN
	SELECT RAISE(ABORT, 'run events are append-only');
END;
CREATE TRIGGER platform_run_events_no_delete BEFORE DELETE ON platform_run_events
BEGIN
	SELECT RAISE(ABORT, 'run events are append-only');
END;

-- The scheduler's due table: the pending timers of each run, rewritten
-- with the run's state.
CREATE TABLE platform_run_timers (
	run_id   TEXT NOT NULL REFERENCES platform_runs(id),
	timer_id TEXT NOT NULL,
	due_at   INTEGER NOT NULL,
	PRIMARY KEY (run_id, timer_id)
);
CREATE INDEX platform_run_timers_due ON platform_run_timers(due_at);
