package engine

import (
	"context"
	"database/sql"
	"github.com/agentbridge/bridge/platform/api"

	"github.com/agentbridge/bridge/platform/kernel"
)

// enqueueWorkerTask queues a worker task. TODO(helper): implement.
func enqueueWorkerTask(ctx context.Context, tx *sql.Tx, r *runRow, t *kernel.TaskSpec) error {
	return nil
}

// cancelWorkerTask withdraws a worker task. TODO(helper): implement.
func cancelWorkerTask(ctx context.Context, tx *sql.Tx, r *runRow, id, reason string) error {
	return nil
}

// recoverLeases handles expired worker leases. TODO(helper): implement.
func (s *Service) recoverLeases(ctx context.Context) (int, error) { return 0, nil }

// registerWorkers adds the worker task routes. TODO(helper).
func (s *Service) registerWorkers(add func(api.Route)) {}
