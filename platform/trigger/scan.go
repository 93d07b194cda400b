package trigger

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
)

// DueBatch is how many due schedules one scheduler turn handles (docs/platform-api.md,
// "Limits"); they fire in parallel so that their commits share fsyncs.
const DueBatch = 10

// errMoved: the schedule changed between the scan's read and its write
// (saved, disabled, deleted or handled by another turn); the next scan
// looks at it again.
var errMoved = errors.New("trigger: schedule changed during the scan")

// DueSchedules is the scheduler loop's "due schedules" phase
// (engine.Phase): it handles up to DueBatch enabled schedules whose next
// occurrence is due at the injected clock's time, and answers whether the
// batch was full.
//
// Firing rules (docs/platform-api.md, "Generic rules"): only the occurrence in the
// current minute starts a run; older ones become one immutable skipped
// range and are never caught up. The run, its occurrence record (keyed by
// schedule and occurrence) and the advanced cursor commit in one
// transaction, so an occurrence starts at most one run, across restarts
// and SIGKILL. A start refused for capacity (or failing transiently)
// leaves the schedule enabled with the same cursor: the next scan retries
// the same occurrence key while it is still in its minute. A retired
// activation, a principal without run.start or a calendar without a
// representable future occurrence blocks the schedule.
func (s *Service) DueSchedules(ctx context.Context) (bool, error) {
	now := s.now().UTC()
	ids, err := dueSchedules(ctx, s.db.Reader(), now, DueBatch)
	if err != nil {
		return false, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.fire(ctx, id, now); err != nil && !errors.Is(err, errMoved) {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return len(ids) == DueBatch, first
}

// fire handles one due schedule at now.
func (s *Service) fire(ctx context.Context, id string, now time.Time) error {
	cur, err := getSchedule(ctx, s.db.Reader(), s.inputs(), id)
	if err != nil {
		return err
	}
	if cur.Status != StatusEnabled || cur.NextDueAt == nil || cur.NextDueAt.After(now) {
		return nil
	}
	cal, err := ParseCalendar(cur.Cron)
	if err != nil {
		return s.block(ctx, cur, BlockedNoOccurrence)
	}
	minute := now.Truncate(time.Minute)
	if cur.NextDueAt.Before(minute) {
		if cur, err = s.skip(ctx, cur, cal, minute); err != nil || cur.NextDueAt == nil || cur.NextDueAt.After(now) {
			return err
		}
	}
	sc := auth.Scope{Tenant: cur.Tenant, Project: cur.Project, Environment: cur.Environment}
	d, err := s.standing(ctx, cur.PrincipalID, auth.CapRunStart, sc)
	if err != nil {
		return err
	}
	if !d.Allowed {
		return s.block(ctx, cur, BlockedGrant)
	}
	occ := *cur.NextDueAt
	_, err = s.runs.StartActivation(ctx, engine.LocalStart{Scope: sc, ActivationID: cur.ActivationID, Input: cur.Input, By: cur.PrincipalID,
		Commit: func(tx *sql.Tx, run engine.RunInfo) error {
			r := cur
			next, err := cal.Next(occ, false)
			if err != nil {
				reason := BlockedNoOccurrence
				r.Status, r.NextDueAt, r.BlockedReason = StatusBlocked, nil, &reason
			} else {
				r.NextDueAt = &next
			}
			if err := s.advance(ctx, tx, r, cur); err != nil {
				return err
			}
			return insertOccurrence(ctx, tx, cur.ID, Occurrence{Kind: OccurrenceStarted, From: occ, To: occ, RunID: &run.ID,
				Revision: cur.Revision, ObservedAt: s.timestamp()})
		}})
	if err == nil || errors.Is(err, errMoved) {
		return err
	}
	var ae *api.Error
	if !errors.As(err, &ae) || ae.IsCapacity() {
		// Capacity or a transient failure: same occurrence next scan.
		return err
	}
	reason := BlockedInput
	if ae.Code == api.CodeConflict || (len(ae.Diagnostics) > 0 && ae.Diagnostics[0].Path == "/activation_id") {
		reason = BlockedActivation
	}
	return s.block(ctx, cur, reason)
}

// skip records the occurrences of cur from its cursor to the last one
// before minute as one skipped range and moves the cursor to the first
// occurrence at or after minute; it answers the schedule as stored.
func (s *Service) skip(ctx context.Context, cur row, cal Calendar, minute time.Time) (row, error) {
	from := *cur.NextDueAt
	to, err := cal.Prev(minute)
	if err != nil || to.Before(from) {
		to = from
	}
	r := cur
	next, err := cal.Next(minute, true)
	if err != nil {
		reason := BlockedNoOccurrence
		r.Status, r.NextDueAt, r.BlockedReason = StatusBlocked, nil, &reason
	} else {
		r.NextDueAt = &next
	}
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := s.advance(ctx, tx, r, cur); err != nil {
			return err
		}
		return insertOccurrence(ctx, tx, cur.ID, Occurrence{Kind: OccurrenceSkipped, From: from, To: to, Revision: cur.Revision, ObservedAt: s.timestamp()})
	})
	return r, err
}

// block sets a scan's blocked status and reason on cur (its revision is
// unchanged: the configuration did not change; a save or enable rebinds).
func (s *Service) block(ctx context.Context, cur row, reason string) error {
	r := cur
	r.Status, r.NextDueAt, r.BlockedReason = StatusBlocked, nil, &reason
	s.log.Info("trigger: schedule blocked", "schedule", cur.ID, "reason", reason)
	return s.db.Write(ctx, func(tx *sql.Tx) error { return s.advance(ctx, tx, r, cur) })
}

// advance stores a scan's change of cur (same revision, same updater)
// unless cur changed meanwhile (errMoved).
func (s *Service) advance(ctx context.Context, tx *sql.Tx, r, cur row) error {
	ok, err := updateSchedule(ctx, tx, s.inputs(), r, cur.Revision, cur.Status, cur.NextDueAt)
	if err != nil {
		return err
	}
	if !ok {
		return errMoved
	}
	return nil
}
