package trigger

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// tagSchedules is the OpenAPI tag of the routes.
const tagSchedules = "Schedules"

// scheduleBase is E/schedules relative to api.Prefix.
const scheduleBase = "/tenants/{tenant}/projects/{project}/environments/{environment}/schedules"

// Register adds the schedule routes to a.
func (s *Service) Register(a *api.API, r *httprouter.Router) {
	change := func(action, summary, desc string, h api.HandlerFunc) api.Route {
		return api.Route{Method: http.MethodPost, Path: scheduleBase + "/{id}/" + action, Capability: auth.CapTriggerManage,
			IfMatch: api.PolicyRequired, Handler: h, OperationID: action + "Schedule", Tag: tagSchedules, Summary: summary,
			Description: desc + " Needs If-Match with the current revision: a stale one answers 409 PF-SCHEDULE-REVISION, as does any change of a deleted schedule.",
			Response:    Schedule{}, ETag: true}
	}
	routes := []api.Route{
		{Method: http.MethodPost, Path: scheduleBase, Capability: auth.CapTriggerManage, Idempotency: api.PolicyOptional, IfMatch: api.PolicyOptional,
			Handler: s.save, OperationID: "saveSchedule", Tag: tagSchedules, Summary: "Create or replace a schedule",
			Description: "Needs trigger.manage and run.start; the caller becomes the execution principal of the new revision. Without id, or with a new id " +
				"and no If-Match, creates a schedule (201); with the id of an existing schedule and If-Match equal to its revision, saves a new revision " +
				"(200) with a fresh future cursor (a blocked schedule is rebound and enabled; a disabled one stays disabled). The calendar is checked " +
				"first (422 PF-VALIDATION naming the field), then its next occurrence (422 PF-SCHEDULE-RANGE), then the activation and input as a run " +
				"start would be. 409 PF-SCHEDULE-REVISION: stale If-Match, an existing id without If-Match, a new id with one, or a deleted schedule. " +
				"The answer lists the next five due times.",
			Request: ScheduleRequest{}, Response: Upcoming{}, Status: http.StatusCreated, ETag: true, MaxBody: MaxInputBytes + 64<<10},
		{Method: http.MethodGet, Path: scheduleBase, Capability: auth.CapRunRead, Page: true, Handler: s.list,
			OperationID: "listSchedules", Tag: tagSchedules, Summary: "List the environment's schedules",
			Description: "Every schedule of the environment in id order, deleted ones (tombstones) included. Needs run.read on the environment.",
			Response:    api.Page[Schedule]{}},
		{Method: http.MethodGet, Path: scheduleBase + "/{id}", Capability: auth.CapRunRead, Handler: s.get,
			OperationID: "getSchedule", Tag: tagSchedules, Summary: "Read a schedule", Response: Schedule{}, ETag: true},
		{Method: http.MethodGet, Path: scheduleBase + "/{id}/occurrences", Capability: auth.CapRunRead, Page: true, Handler: s.occurrences,
			OperationID: "listScheduleOccurrences", Tag: tagSchedules, Summary: "List a schedule's occurrences, newest first",
			Description: "Started occurrences (with run_id) and immutable skipped ranges (missed occurrences, from..to), newest first; limit 1..100, default 100.",
			Response:    api.Page[Occurrence]{}},
		change("disable", "Disable a schedule", "An enabled or blocked schedule stops firing; its history is kept. A disabled one answers 409 PF-CONFLICT.", s.disable),
		change("enable", "Enable a schedule", "Needs run.start too; the caller becomes the execution principal of the new revision, whose cursor starts "+
			"after the current minute: occurrences missed while disabled are not replayed. Enables a disabled or blocked schedule (rebinding it); "+
			"an enabled one answers 409 PF-CONFLICT.", s.enable),
		change("delete", "Delete a schedule", "Leaves a tombstone (status deleted): its revisions and occurrences stay readable.", s.remove),
	}
	for _, rt := range routes {
		a.Handle(r, rt)
	}
	s.registerTriggers(a, r)
}

// requireEnvironment answers 404 unless the path's environment exists.
func requireEnvironment(c *api.Call, q store.Querier) error {
	sc := c.PathScope()
	ok, err := environmentExists(c.Context(), q, sc.Tenant, sc.Project, sc.Environment)
	if err != nil {
		return err
	}
	if !ok {
		return api.NotFound("environment")
	}
	return nil
}

// read loads the schedule named by the path in the path's environment.
func (s *Service) read(c *api.Call, q store.Querier) (row, error) {
	id, err := c.UUIDParam("id", "schedule")
	if err != nil {
		return row{}, err
	}
	if err := requireEnvironment(c, q); err != nil {
		return row{}, err
	}
	r, err := getSchedule(c.Context(), q, s.inputs(), id)
	if errors.Is(err, errNotFound) || (err == nil && r.Environment != c.PathScope().Environment) {
		return row{}, api.NotFound("schedule")
	}
	return r, err
}

// save serves POST E/schedules.
func (s *Service) save(c *api.Call) error {
	var req ScheduleRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	ck, err := checkRequest(req)
	if err != nil {
		return err
	}
	ctx, sc := c.Context(), c.PathScope()
	if err := c.Authorize(auth.CapRunStart, sc); err != nil {
		return err
	}
	now := s.timestamp()
	next, err := firstDue(ck.cal, now)
	if err != nil {
		return err
	}
	if err := requireEnvironment(c, s.db.Reader()); err != nil {
		return err
	}
	if err := s.runs.CheckStart(ctx, sc, req.ActivationID, ck.input); err != nil {
		return err
	}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		r, created, err := s.saveRow(c, tx, ck, now, next)
		if err != nil {
			return nil, err
		}
		shown, err := s.shown(ctx, sc, r.Schedule)
		if err != nil {
			return nil, err
		}
		res := &api.Result{Body: Upcoming{Schedule: shown, Upcoming: ck.cal.Upcoming(now, 5)}, Revision: r.Revision}
		if created {
			res.Location = schedulePath(sc, r.ID)
		} else {
			res.Status = http.StatusOK
		}
		return res, nil
	}, nil)
}

// saveRow applies the save rules in tx and answers the stored schedule and
// whether it was created.
func (s *Service) saveRow(c *api.Call, tx *sql.Tx, ck checked, now, next time.Time) (row, bool, error) {
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	if err := requireEnvironment(c, tx); err != nil {
		return row{}, false, err
	}
	fresh := row{Schedule: Schedule{Revision: 1, Status: StatusEnabled, Cron: ck.cal.String(), Timezone: TimezoneUTC, MissedPolicy: MissedSkip,
		ActivationID: ck.req.ActivationID, Input: ck.input, NextDueAt: &next, PrincipalID: by,
		CreatedAt: now, CreatedBy: by, UpdatedAt: now, UpdatedBy: by}, Tenant: sc.Tenant, Project: sc.Project, Environment: sc.Environment}
	create := func(id string) (row, bool, error) {
		fresh.ID = id
		return fresh, true, insertSchedule(ctx, tx, s.inputs(), fresh)
	}
	if ck.req.ID == "" {
		if c.IfMatch() != 0 {
			return row{}, false, revisionConflict(0, "a new schedule is saved without If-Match; send the id of an existing schedule to replace it")
		}
		return create(s.newID())
	}
	cur, err := getSchedule(ctx, tx, s.inputs(), ck.req.ID)
	if errors.Is(err, errNotFound) {
		if c.IfMatch() != 0 {
			return row{}, false, revisionConflict(0, "no schedule has id %s: a new id is saved without If-Match", ck.req.ID)
		}
		return create(ck.req.ID)
	}
	if err != nil {
		return row{}, false, err
	}
	if cur.Environment != sc.Environment {
		return row{}, false, revisionConflict(0, "the id %s is taken; choose another id for a new schedule", ck.req.ID)
	}
	if err := checkChange(cur.Schedule, c.IfMatch()); err != nil {
		return row{}, false, err
	}
	r := fresh
	r.ID, r.Revision, r.CreatedAt, r.CreatedBy = cur.ID, cur.Revision+1, cur.CreatedAt, cur.CreatedBy
	if cur.Status == StatusDisabled {
		r.Status, r.NextDueAt = StatusDisabled, nil
	}
	if err := s.storeOver(ctx, tx, r, cur); err != nil {
		return row{}, false, err
	}
	return r, false, nil
}

// storeOver writes r over cur, which must not have changed since it was read.
func (s *Service) storeOver(ctx context.Context, tx *sql.Tx, r, cur row) error {
	ok, err := updateSchedule(ctx, tx, s.inputs(), r, cur.Revision, cur.Status, cur.NextDueAt)
	if err == nil && !ok {
		err = revisionConflict(0, "the schedule changed meanwhile; read it again")
	}
	return err
}

// transition serves a change of an existing schedule's status: the
// revision rules, then apply, then a new revision by the caller.
func (s *Service) transition(c *api.Call, apply func(r *row, now time.Time) error) error {
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		cur, err := s.read(c, tx)
		if err != nil {
			return nil, err
		}
		if err := checkChange(cur.Schedule, c.IfMatch()); err != nil {
			return nil, err
		}
		now, r := s.timestamp(), cur
		if err := apply(&r, now); err != nil {
			return nil, err
		}
		r.Revision, r.UpdatedAt, r.UpdatedBy = cur.Revision+1, now, c.Caller.Principal.ID
		if err := s.storeOver(c.Context(), tx, r, cur); err != nil {
			return nil, err
		}
		shown, err := s.shown(c.Context(), c.PathScope(), r.Schedule)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: shown, Revision: r.Revision}, nil
	}, nil)
}

// disable serves POST E/schedules/{id}/disable.
func (s *Service) disable(c *api.Call) error {
	return s.transition(c, func(r *row, _ time.Time) error {
		if r.Status == StatusDisabled {
			return api.Conflict(api.CodeConflict, "the schedule is already disabled")
		}
		r.Status, r.NextDueAt, r.BlockedReason = StatusDisabled, nil, nil
		return nil
	})
}

// enable serves POST E/schedules/{id}/enable: the caller becomes the
// execution principal and the cursor starts after the current minute.
func (s *Service) enable(c *api.Call) error {
	sc := c.PathScope()
	if err := c.Authorize(auth.CapRunStart, sc); err != nil {
		return err
	}
	cur, err := s.read(c, s.db.Reader())
	if err != nil {
		return err
	}
	cal, err := ParseCalendar(cur.Cron)
	if err != nil {
		return err
	}
	if cur.Status != StatusDeleted && cur.Status != StatusEnabled {
		if _, err := firstDue(cal, s.now()); err != nil {
			return err
		}
		if err := s.runs.CheckStart(c.Context(), sc, cur.ActivationID, cur.Input); err != nil {
			return err
		}
	}
	return s.transition(c, func(r *row, now time.Time) error {
		if r.Status == StatusEnabled {
			return api.Conflict(api.CodeConflict, "the schedule is already enabled")
		}
		next, err := firstDue(cal, now)
		if err != nil {
			return err
		}
		r.Status, r.NextDueAt, r.BlockedReason, r.PrincipalID = StatusEnabled, &next, nil, c.Caller.Principal.ID
		return nil
	})
}

// remove serves POST E/schedules/{id}/delete: a readable tombstone.
func (s *Service) remove(c *api.Call) error {
	return s.transition(c, func(r *row, _ time.Time) error {
		r.Status, r.NextDueAt, r.BlockedReason = StatusDeleted, nil, nil
		return nil
	})
}

// list serves GET E/schedules.
func (s *Service) list(c *api.Call) error {
	q, err := c.PageQuery("schedules", nil)
	if err != nil {
		return err
	}
	r := s.db.Reader()
	if err := requireEnvironment(c, r); err != nil {
		return err
	}
	rows, err := listSchedules(c.Context(), r, s.inputs(), c.PathScope().Environment, q.After, q.Fetch())
	if err != nil {
		return err
	}
	for i := range rows {
		if rows[i], err = s.shown(c.Context(), c.PathScope(), rows[i]); err != nil {
			return err
		}
	}
	page, err := api.MakePage(q, rows, func(s Schedule) string { return s.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// get serves GET E/schedules/{id}.
func (s *Service) get(c *api.Call) error {
	r, err := s.read(c, s.db.Reader())
	if err != nil {
		return err
	}
	shown, err := s.shown(c.Context(), c.PathScope(), r.Schedule)
	if err != nil {
		return err
	}
	return c.Respond(&api.Result{Body: shown, Revision: r.Revision})
}

// occurrences serves GET E/schedules/{id}/occurrences.
func (s *Service) occurrences(c *api.Call) error {
	id, err := c.UUIDParam("id", "schedule")
	if err != nil {
		return err
	}
	q, err := c.PageQuery("schedule-occurrences", map[string]string{"schedule": id})
	if err != nil {
		return err
	}
	if limit, err := c.Query("limit"); err != nil {
		return err
	} else if limit == "" {
		q.Limit = defaultOccurrenceLimit
	}
	var before int64
	if q.After != "" {
		if before, err = strconv.ParseInt(q.After, 10, 64); err != nil {
			return api.InvalidParameter(api.CodeValidation, "cursor", "the cursor is not valid for this list")
		}
	}
	rd := s.db.Reader()
	if _, err := s.read(c, rd); err != nil {
		return err
	}
	rows, err := listOccurrences(c.Context(), rd, id, before, q.Fetch())
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, rows, func(o Occurrence) string { return strconv.FormatInt(o.From.UnixMilli(), 10) })
	if err != nil {
		return err
	}
	return c.OK(page)
}
