package sim

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/lang"
)

// Editor document limits (docs/platform-api.md, "Editor documents").
const (
	MaxTestDataBytes = 1 << 20
	MaxCanvasBytes   = 256 << 10
)

// Document is a stored editor document in its snake_case envelope.
type Document struct {
	DraftID              string          `json:"draft_id"`
	Kind                 string          `json:"kind"`
	Revision             int64           `json:"revision"`
	DraftRevision        int64           `json:"draft_revision"`
	Document             json.RawMessage `json:"document"`
	ContainsRunData      bool            `json:"contains_run_data"`
	SourceEnvironmentIDs []string        `json:"source_environment_ids"`
	UpdatedAt            time.Time       `json:"updated_at"`
	UpdatedBy            string          `json:"updated_by"`
}

// DocumentSave is the body of a save: only the draft revision and the
// document (the derived fields are refused by strict decoding).
type DocumentSave struct {
	DraftRevision int64           `json:"draft_revision"`
	Document      json.RawMessage `json:"document"`
}

// RunReader says whether the caller may read runs of an environment
// (run.read), for documents holding run data.
type RunReader func(environment string) error

// docSource is an entry's provenance: run data names its environment.
type docSource struct {
	Source        string `json:"source"`
	EnvironmentID string `json:"environmentId"`
}

// runData derives contains_run_data and source_environment_ids: every
// entry (at any depth) with source "run" must name its environmentId.
func runData(doc json.RawMessage) (bool, []string, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return false, nil, err
	}
	envs := map[string]bool{}
	found := false
	var walk func(x any) error
	walk = func(x any) error {
		switch t := x.(type) {
		case map[string]any:
			if t["source"] == "run" {
				found = true
				env, _ := t["environmentId"].(string)
				if env == "" {
					return errors.New("an entry with source run names its environmentId")
				}
				envs[env] = true
			}
			for _, m := range t {
				if err := walk(m); err != nil {
					return err
				}
			}
		case []any:
			for _, m := range t {
				if err := walk(m); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(v); err != nil {
		return false, nil, err
	}
	out := make([]string, 0, len(envs))
	for e := range envs {
		out = append(out, e)
	}
	sort.Strings(out)
	return found, out, nil
}

func mergeIDs(a, b []string) []string {
	m := map[string]bool{}
	for _, x := range append(append([]string{}, a...), b...) {
		m[x] = true
	}
	out := make([]string, 0, len(m))
	for x := range m {
		out = append(out, x)
	}
	sort.Strings(out)
	return out
}

func checkRunRead(d *Document, canRead RunReader) error {
	for _, env := range d.SourceEnvironmentIDs {
		if err := canRead(env); err != nil {
			return err
		}
	}
	return nil
}

// GetDocument reads a draft's editor document.
func (s *Service) GetDocument(ctx context.Context, sc Scope, draft, kind string, canRead RunReader) (*Document, error) {
	if _, err := catalog.DraftSource(ctx, s.db.Reader(), sc.Tenant, sc.Project, draft, 1); errors.Is(err, catalog.ErrDraftNotFound) {
		return nil, refuse(CodeNotFound, "", "no draft with that id in this project")
	}
	d, err := readDocument(ctx, s.db.Reader(), sc.Project, draft, kind)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, refuse(CodeNotFound, "", "the draft has no %s document", kind)
	}
	if err := checkRunRead(d, canRead); err != nil {
		return nil, err
	}
	return d, nil
}

// SaveDocument creates (ifMatch 0) or replaces (ifMatch = the current
// revision) a draft's editor document.
func (s *Service) SaveDocument(ctx context.Context, sc Scope, draft, kind string, ifMatch int64, req DocumentSave, canRead RunReader) (*Document, bool, error) {
	limit := MaxCanvasBytes
	if kind == "test-data" {
		limit = MaxTestDataBytes
	}
	if len(req.Document) > limit {
		return nil, false, refuse(CodeDocSize, "/document", "a %s document is at most %d bytes (this one is %d)", kind, limit, len(req.Document))
	}
	var head struct {
		SchemaVersion int    `json:"schemaVersion"`
		Kind          string `json:"kind"`
	}
	if err := json.Unmarshal(req.Document, &head); err != nil || !bytes.HasPrefix(bytes.TrimSpace(req.Document), []byte("{")) {
		return nil, false, refuse(CodeStudioReq, "/document", "the document is a JSON object")
	}
	if head.SchemaVersion != 1 {
		return nil, false, refuse(CodeStudioReq, "/document/schemaVersion", "schemaVersion is 1")
	}
	if head.Kind != kind {
		return nil, false, refuse(CodeStudioReq, "/document/kind", "the document's kind is %q", kind)
	}
	if req.DraftRevision <= 0 {
		return nil, false, refuse(CodeStudioReq, "/draft_revision", "draft_revision is a saved revision of the draft")
	}
	src, err := catalog.DraftSource(ctx, s.db.Reader(), sc.Tenant, sc.Project, draft, req.DraftRevision)
	switch {
	case errors.Is(err, catalog.ErrDraftNotFound):
		return nil, false, refuse(CodeNotFound, "", "no draft with that id in this project")
	case errors.Is(err, catalog.ErrDraftRevision), errors.Is(err, catalog.ErrDraftRetired):
		return nil, false, refuse(CodeStudioReq, "/draft_revision", "%v", err)
	case err != nil:
		return nil, false, err
	}
	if kind == "test-data" {
		td, err := DecodeTestData(req.Document)
		if err != nil {
			e := err.(*Error)
			e.Path = "/document" + e.Path
			return nil, false, e
		}
		if err := s.checkDocSecrets(ctx, sc, src, td); err != nil {
			return nil, false, err
		}
	}
	run, envs, err := runData(req.Document)
	if err != nil {
		return nil, false, refuse(CodeStudioReq, "/document", "%v", err)
	}
	now := s.clock()
	var out *Document
	created := false
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		cur, err := readDocument(ctx, tx, sc.Project, draft, kind)
		if err != nil {
			return err
		}
		d := &Document{DraftID: draft, Kind: kind, Revision: 1, DraftRevision: req.DraftRevision, Document: req.Document,
			ContainsRunData: run, SourceEnvironmentIDs: envs, UpdatedAt: now, UpdatedBy: sc.Principal}
		switch {
		case cur == nil && ifMatch != 0:
			return api.StaleRevision(0, "the draft has no %s document yet: save it without If-Match", kind)
		case cur != nil && ifMatch == 0:
			return refuse(CodeETag, "", "the document exists: send If-Match with its revision %d", cur.Revision)
		case cur != nil && cur.Revision != ifMatch:
			return api.StaleRevision(0, "the document is at revision %d, not %d", cur.Revision, ifMatch)
		case cur != nil:
			d.Revision = cur.Revision + 1
			d.ContainsRunData = cur.ContainsRunData || run
			d.SourceEnvironmentIDs = mergeIDs(cur.SourceEnvironmentIDs, envs)
		}
		if err := checkRunRead(d, canRead); err != nil {
			return err
		}
		if err := upsertDocument(ctx, tx, sc.Project, d); err != nil {
			return err
		}
		out, created = d, cur == nil
		return nil
	})
	return out, created, err
}

// checkDocSecrets refuses secret-marked values in test data, by the
// secret positions of the draft's workflow compiled against the
// project's catalog (a draft that does not compile has none to check).
func (s *Service) checkDocSecrets(ctx context.Context, sc Scope, src string, td TestData) error {
	lock, err := catalog.ProjectLock(ctx, s.db.Reader(), sc.Project)
	if err != nil {
		return err
	}
	res := lang.Compile([]byte(src), lang.Options{Catalog: lock})
	if !res.OK {
		return nil
	}
	// The program loads with the definitions it references (a decision
	// table's artifact is required), as a debug session's does.
	refLock, defs, err := s.resolve(ctx, sc.Project, res.Artifact)
	if err != nil {
		return err
	}
	p, err := LoadProgram(res.Artifact, refLock, defs)
	if err != nil {
		// A compiled draft the kernel cannot load cannot have its secret
		// positions checked: refuse rather than store unchecked values.
		return refuse(CodeStudioReq, "/document", "the draft's workflow cannot be loaded to check its secret values: %v", err)
	}
	for _, e := range p.check(td) {
		if e.Code == CodeSecretValue {
			return refuse(CodeSecretValue, "/document"+e.Path, "the test data holds a value the workflow marks secret")
		}
	}
	return nil
}
