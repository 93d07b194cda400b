package engine

import (
	"context"
	"database/sql"
	"github.com/agentbridge/bridge/platform/api"

	"github.com/agentbridge/bridge/platform/kernel"
)

// openHumanTask stores an opened human task. TODO(helper): implement.
func openHumanTask(ctx context.Context, tx *sql.Tx, r *runRow, h *kernel.HumanTask) error { return nil }

// closeHumanTask closes a human task. TODO(helper): implement.
func closeHumanTask(ctx context.Context, tx *sql.Tx, r *runRow, h *kernel.HumanTask, reason string) error {
	return nil
}

// registerHumans adds the human task routes. TODO(helper).
func (s *Service) registerHumans(add func(api.Route)) {}
