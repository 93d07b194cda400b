-- The loop's sleep and the expired-ready-tasks phase look for the earliest
-- claim deadline of ready tasks; cancelling or ending a run deletes its
-- tasks by run.
CREATE INDEX platform_worker_tasks_due ON platform_worker_tasks(status, deadline_at);
CREATE INDEX platform_worker_tasks_run ON platform_worker_tasks(run_id);
