package catalog

import (
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/lang"
)

// compileProblem is 422 PF-VALIDATION for a source that does not compile,
// with the compiler's diagnostics and the compile result as "result".
func compileProblem(res lang.Result) error {
	e := &api.Error{Code: api.CodeValidation,
		Message: "the source does not compile against the project's catalog"}
	for _, d := range res.Diagnostics {
		if d.Severity != lang.SeverityError {
			continue
		}
		if len(e.Diagnostics) == 20 {
			break
		}
		e.Diagnostics = append(e.Diagnostics, api.Diagnostic{Code: d.Code, Path: "/source", Message: positioned(d)})
	}
	if len(e.Diagnostics) == 0 {
		e.Diagnostics = []api.Diagnostic{{Code: "partial", Path: "/source", Message: "the artifact is partial: a reference could not be resolved"}}
	}
	if body, err := res.Encode(); err == nil {
		e.Result = json.RawMessage(body)
	}
	return e
}

// positioned renders a diagnostic as line:column: message.
func positioned(d lang.Diagnostic) string {
	return strconv.Itoa(d.Range.Start.Line) + ":" + strconv.Itoa(d.Range.Start.Column) + ": " + d.Message
}

// sourceKind reads the kind of a source ("" when it cannot be read).
func sourceKind(src []byte) string {
	f, _ := lang.Parse(src, "")
	if f == nil {
		return ""
	}
	return f.Kind
}

// publish serves POST P/{collection}: it compiles the source against the
// project's current catalog lock (read in the publishing transaction, so
// the authority and catalog checks are repeated at publication) and stores
// an immutable version with a new id. 409 when that version is already
// published: a change needs a new version number.
func (s *Service) publish(col collection) api.HandlerFunc {
	return func(c *api.Call) error {
		var req PublishRequest
		if err := c.Decode(&req); err != nil {
			return err
		}
		if err := checkSource(req.Source, req.Format); err != nil {
			return err
		}
		src := []byte(req.Source)
		if k := sourceKind(src); k != col.Kind {
			if k == "" {
				k = "unreadable"
			}
			return api.Invalid("/source", "the source's kind is %s; %s accepts only kind %s", k, col.Segment, col.Kind)
		}
		scope := c.PathScope()
		by := c.Caller.Principal.ID
		ctx := c.Context()
		return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
			lock, err := s.lock(ctx, tx, c)
			if err != nil {
				return nil, err
			}
			res := lang.Compile(src, lang.Options{Catalog: lock})
			if !res.OK {
				return nil, compileProblem(res)
			}
			var head struct {
				ID      string `json:"id"`
				Version int    `json:"version"`
			}
			if err := json.Unmarshal(res.Artifact, &head); err != nil {
				return nil, err
			}
			if id, err := versionExists(ctx, tx, scope.Project, col.Kind, head.ID, head.Version); err != nil {
				return nil, err
			} else if id != "" {
				return nil, api.Conflict(api.CodeConflict, "%s %s@%d is already published (id %s); published versions never change: publish a new version",
					col.Name, head.ID, head.Version, id)
			}
			catDigest, err := lock.Digest()
			if err != nil {
				return nil, err
			}
			v := Version{ID: s.newID(), Kind: col.Kind, DefinitionID: head.ID, Version: head.Version, Digest: res.Digest,
				Artifact: res.Artifact, Source: req.Source, Format: FormatYAML, CatalogDigest: catDigest,
				PublishedAt: s.now().UTC().Truncate(time.Millisecond), PublishedBy: by}
			if err := insertVersion(ctx, tx, scope.Tenant, scope.Project, v); err != nil {
				return nil, err
			}
			return &api.Result{Body: v, Revision: 1, Location: projectPath(scope.Tenant, scope.Project) + "/" + col.Segment + "/" + v.ID}, nil
		}, nil)
	}
}

func projectPath(tenant, project string) string {
	return api.Prefix + "/tenants/" + tenant + "/projects/" + project
}

// listVersionsRoute serves GET P/{collection}: published versions in id
// order, optionally of one definition id.
func (s *Service) listVersionsRoute(col collection) api.HandlerFunc {
	return func(c *api.Call) error {
		defID, err := c.Query("definition_id")
		if err != nil {
			return err
		}
		q, err := c.PageQuery(col.Segment, map[string]string{"definition_id": defID})
		if err != nil {
			return err
		}
		ctx, r := c.Context(), s.db.Reader()
		if err := s.requireProject(ctx, r, c); err != nil {
			return err
		}
		rows, err := listVersions(ctx, r, c.PathScope().Project, col.Kind, defID, q.After, q.Fetch())
		if err != nil {
			return err
		}
		items := make([]VersionSummary, len(rows))
		for i, v := range rows {
			items[i] = v.summary()
		}
		page, err := api.MakePage(q, items, func(v VersionSummary) string { return v.ID })
		if err != nil {
			return err
		}
		return c.OK(page)
	}
}

// getVersionRoute serves GET P/{collection}/{identifier}. A published
// version never changes, so its ETag is always "1".
func (s *Service) getVersionRoute(col collection) api.HandlerFunc {
	return func(c *api.Call) error {
		id, err := c.UUIDParam("identifier", col.Name)
		if err != nil {
			return err
		}
		ctx, r := c.Context(), s.db.Reader()
		if err := s.requireProject(ctx, r, c); err != nil {
			return err
		}
		v, err := getVersion(ctx, r, c.PathScope().Project, col.Kind, id)
		if errors.Is(err, errNotFound) {
			return api.NotFound(col.Name)
		}
		if err != nil {
			return err
		}
		return c.Respond(&api.Result{Body: v, Revision: 1})
	}
}
