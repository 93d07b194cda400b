package bridge

import (
	"context"
	"database/sql"
	"errors"
	"github.com/agentbridge/bridge/store"
	"time"
)

// The SQL of workflow agent steps' jobs (table bridge_workflow_agent_jobs):
// one job per step operation, whichever attempt of the step asks.

// agentJobOf reads the job an operation created and the task of the
// attempt that last used it; found is false when there is none.
func agentJobOf(ctx context.Context, tx *sql.Tx, operationKey string) (jobID, taskID string, found bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT job_id, task_id FROM bridge_workflow_agent_jobs WHERE operation_key = ?`, operationKey).Scan(&jobID, &taskID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	return jobID, taskID, err == nil, err
}

// insertAgentJob records the job an operation created.
func insertAgentJob(ctx context.Context, tx *sql.Tx, operationKey, jobID, runID, taskID string, now time.Time) error {
	ts := store.Text(now)
	_, err := tx.ExecContext(ctx, `INSERT INTO bridge_workflow_agent_jobs(operation_key, job_id, run_id, task_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`, operationKey, jobID, runID, taskID, ts, ts)
	return err
}

// setAgentJobTask records that the attempt taskID now uses the
// operation's job.
func (s *Service) setAgentJobTask(ctx context.Context, operationKey, taskID string) error {
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE bridge_workflow_agent_jobs SET task_id = ?, updated_at = ? WHERE operation_key = ?`,
			taskID, store.Text(s.now()), operationKey)
		return err
	})
}
