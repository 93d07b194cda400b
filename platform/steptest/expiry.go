package steptest

import (
	"context"
	"database/sql"
	"errors"
)

// expiryBatch bounds each kind of expiry per scheduler turn.
const expiryBatch = 10

// Expire is the scheduler phase (engine.Service.AddPhase) that ends, by
// the injected clock, step tests past their time limit (their runs are
// cancelled; status timed_out) and test activations past expires_at
// (their activation is retired and their listen routes removed; their
// test runs stay readable). It answers whether a batch was full.
func (s *Service) Expire(ctx context.Context) (bool, error) {
	now := s.timestamp()
	steps, err := dueSteps(ctx, s.db.Reader(), now, expiryBatch)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, r := range steps {
		info, err := s.runs.ReadRun(ctx, r.RunID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st := statusOf(info.Status, info.Paused); ended(st) {
			// The kernel's run timeout (or the run's own end) came first.
			errs = append(errs, s.db.Write(ctx, func(tx *sql.Tx) error { return setEnded(ctx, tx, r.ID, st, now) }))
			continue
		}
		errs = append(errs, s.end(ctx, r, StatusTimedOut, "the step test's time limit passed"))
	}
	tas, err := dueTAs(ctx, s.db.Reader(), now, expiryBatch)
	if err != nil {
		return false, err
	}
	for _, r := range tas {
		errs = append(errs, s.expire(ctx, r))
	}
	return len(steps) == expiryBatch || len(tas) == expiryBatch, errors.Join(errs...)
}
