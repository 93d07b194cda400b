package catalog

import (
	"database/sql"
	"errors"
	"net/http"
	"strconv"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/store"
)

const (
	draftSave   = "save"
	draftRetire = "retire"
)

func nullKind(src string) sql.NullString {
	k := sourceKind([]byte(src))
	return sql.NullString{String: k, Valid: k != ""}
}

func kindPtr(k sql.NullString) *string {
	if !k.Valid {
		return nil
	}
	s := k.String
	return &s
}

// draftView renders a draft with its history; source is the source of
// revision sourceRev.
func draftView(d draftRow, revs []draftRevision, source string, sourceRev int64) Draft {
	v := Draft{ID: d.ID, Kind: kindPtr(d.Kind), Revision: d.Revision, Source: source, SourceRevision: sourceRev, Format: FormatYAML,
		CreatedAt: store.FromMillis(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: store.FromMillis(d.UpdatedAt), UpdatedBy: d.UpdatedBy,
		Retired: d.RetiredAt.Valid, Revisions: make([]DraftHistory, 0, len(revs))}
	if d.RetiredAt.Valid {
		t := store.FromMillis(d.RetiredAt.Int64)
		by := d.RetiredBy.String
		v.RetiredAt, v.RetiredBy = &t, &by
	}
	for _, r := range revs {
		v.Revisions = append(v.Revisions, DraftHistory{Revision: r.Revision, Action: r.Action, Kind: kindPtr(r.Kind),
			SourceDigest: sourceDigest(r.Source), SourceBytes: len(r.Source), At: store.FromMillis(r.At), By: r.By})
	}
	return v
}

// latestSave is the revision of the draft's current source.
func latestSave(revs []draftRevision) int64 {
	for i := len(revs) - 1; i >= 0; i-- {
		if revs[i].Action == draftSave {
			return revs[i].Revision
		}
	}
	return 0
}

// draftInScope reads a draft of the path's project (404 otherwise).
func draftInScope(c *api.Call, q store.Querier, id string) (draftRow, error) {
	d, err := getDraft(c.Context(), q, id)
	if errors.Is(err, errNotFound) {
		return d, api.NotFound("draft")
	}
	if err != nil {
		return d, err
	}
	sc := c.PathScope()
	if d.Tenant != sc.Tenant || d.Project != sc.Project {
		return d, api.NotFound("draft")
	}
	return d, nil
}

// saveDraftRoute serves PUT P/drafts/{identifier}. A new id (chosen by the
// client, a canonical UUID) is created without If-Match (201); an existing
// draft needs If-Match with its current revision (422 PF-ETAG without it,
// 412 PF-ETAG when stale) and answers 200. A retired draft's id is never
// reused (409). The answer carries the new revision as ETag.
func (s *Service) saveDraftRoute(c *api.Call) error {
	id, err := c.UUIDParam("identifier", "draft")
	if err != nil {
		return err
	}
	var req PublishRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if err := checkSource(req.Source, req.Format); err != nil {
		return err
	}
	kind := nullKind(req.Source)
	sc := c.PathScope()
	by := c.Caller.Principal.ID
	ctx := c.Context()
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := s.requireProject(ctx, tx, c); err != nil {
			return nil, err
		}
		now := store.Millis(s.now())
		d, err := getDraft(ctx, tx, id)
		create := errors.Is(err, errNotFound)
		switch {
		case create:
			if c.IfMatch() != 0 {
				return nil, api.StaleRevision(0, "the draft does not exist; create it without If-Match")
			}
			d = draftRow{ID: id, Tenant: sc.Tenant, Project: sc.Project, CreatedAt: now, CreatedBy: by}
		case err != nil:
			return nil, err
		case d.Tenant != sc.Tenant || d.Project != sc.Project:
			return nil, api.Conflict(api.CodeConflict, "the draft id is already in use; choose another id")
		case d.RetiredAt.Valid:
			return nil, api.Conflict(api.CodeConflict, "the draft was retired; a retired draft id is never reused")
		case c.IfMatch() == 0:
			return nil, api.InvalidParameter(api.CodeETag, "If-Match", "the draft exists: send If-Match with its current revision")
		default:
			if err := api.CheckRevision(c.IfMatch(), d.Revision); err != nil {
				return nil, err
			}
		}
		d.Revision++
		d.Kind, d.Source, d.UpdatedAt, d.UpdatedBy = kind, req.Source, now, by
		if err := saveDraft(ctx, tx, d, create); err != nil {
			return nil, err
		}
		if err := insertDraftRevision(ctx, tx, id, draftRevision{Revision: d.Revision, Action: draftSave, Kind: kind,
			Source: req.Source, At: now, By: by}); err != nil {
			return nil, err
		}
		revs, err := draftRevisions(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		status := http.StatusOK
		if create {
			status = http.StatusCreated
		}
		return &api.Result{Status: status, Body: draftView(d, revs, d.Source, d.Revision), Revision: d.Revision,
			Location: projectPath(sc.Tenant, sc.Project) + "/drafts/" + id}, nil
	}, nil)
}

// retireDraftRoute serves DELETE P/drafts/{identifier}: a new lifecycle
// revision marks the draft retired (If-Match with the current revision is
// required); retiring again is 409.
func (s *Service) retireDraftRoute(c *api.Call) error {
	id, err := c.UUIDParam("identifier", "draft")
	if err != nil {
		return err
	}
	by := c.Caller.Principal.ID
	ctx := c.Context()
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := s.requireProject(ctx, tx, c); err != nil {
			return nil, err
		}
		d, err := draftInScope(c, tx, id)
		if err != nil {
			return nil, err
		}
		if d.RetiredAt.Valid {
			return nil, api.Conflict(api.CodeConflict, "the draft is already retired")
		}
		if err := api.CheckRevision(c.IfMatch(), d.Revision); err != nil {
			return nil, err
		}
		now := store.Millis(s.now())
		d.Revision++
		d.UpdatedAt, d.UpdatedBy = now, by
		d.RetiredAt, d.RetiredBy = sql.NullInt64{Int64: now, Valid: true}, sql.NullString{String: by, Valid: true}
		if err := saveDraft(ctx, tx, d, false); err != nil {
			return nil, err
		}
		if err := insertDraftRevision(ctx, tx, id, draftRevision{Revision: d.Revision, Action: draftRetire, Kind: d.Kind,
			Source: d.Source, At: now, By: by}); err != nil {
			return nil, err
		}
		revs, err := draftRevisions(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: draftView(d, revs, d.Source, latestSave(revs)), Revision: d.Revision}, nil
	}, nil)
}

// getDraftRoute serves GET P/drafts/{identifier}: the draft with every
// lifecycle revision and its retirement metadata (retired drafts included).
// ?revision=N shows the source saved at revision N.
func (s *Service) getDraftRoute(c *api.Call) error {
	id, err := c.UUIDParam("identifier", "draft")
	if err != nil {
		return err
	}
	rawRev, err := c.Query("revision")
	if err != nil {
		return err
	}
	ctx, r := c.Context(), s.db.Reader()
	if err := s.requireProject(ctx, r, c); err != nil {
		return err
	}
	d, err := draftInScope(c, r, id)
	if err != nil {
		return err
	}
	revs, err := draftRevisions(ctx, r, id)
	if err != nil {
		return err
	}
	source, sourceRev := d.Source, latestSave(revs)
	if rawRev != "" {
		n, err := strconv.ParseInt(rawRev, 10, 64)
		if err != nil || n < 1 || n > d.Revision || strconv.FormatInt(n, 10) != rawRev {
			return api.InvalidParameter(api.CodeValidation, "revision", "revision must be one of the draft's revisions, 1 to %d", d.Revision)
		}
		rev := revs[n-1]
		source, sourceRev = rev.Source, rev.Revision
	}
	return c.Respond(&api.Result{Body: draftView(d, revs, source, sourceRev), Revision: d.Revision})
}

// listDraftsRoute serves GET P/drafts: drafts in id order, retired ones
// only with include_retired=true.
func (s *Service) listDraftsRoute(c *api.Call) error {
	raw, err := c.Query("include_retired")
	if err != nil {
		return err
	}
	var include bool
	switch raw {
	case "", "false":
	case "true":
		include = true
	default:
		return api.InvalidParameter(api.CodeValidation, "include_retired", "include_retired must be true or false")
	}
	q, err := c.PageQuery("drafts", map[string]string{"include_retired": strconv.FormatBool(include)})
	if err != nil {
		return err
	}
	ctx, r := c.Context(), s.db.Reader()
	if err := s.requireProject(ctx, r, c); err != nil {
		return err
	}
	rows, err := listDrafts(ctx, r, c.PathScope().Project, q.After, include, q.Fetch())
	if err != nil {
		return err
	}
	items := make([]DraftSummary, len(rows))
	for i, d := range rows {
		items[i] = DraftSummary{ID: d.ID, Kind: kindPtr(d.Kind), Revision: d.Revision, UpdatedAt: store.FromMillis(d.UpdatedAt), Retired: d.RetiredAt.Valid}
		if d.RetiredAt.Valid {
			t := store.FromMillis(d.RetiredAt.Int64)
			items[i].RetiredAt = &t
		}
	}
	page, err := api.MakePage(q, items, func(d DraftSummary) string { return d.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}
