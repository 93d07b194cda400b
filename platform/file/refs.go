package file

import (
	"context"
	"database/sql"
	"errors"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/engine"
)

// Attach checks the files a run's value refers to and records the
// references (engine.FileRefs, docs/workflow-language.md "Files"): each
// must be a ready file of env (422 PF-VALIDATION otherwise), readable by
// the caller (403 PF-FORBIDDEN otherwise): any file with file.read in the
// environment, else a file created through the caller's task or its run's
// tasks, or one the run already refers to.
func (s *Service) Attach(ctx context.Context, tx *sql.Tx, env, run string, ids []string, a engine.FileAccess) (map[string]engine.FileMeta, error) {
	out := make(map[string]engine.FileMeta, len(ids))
	now := s.timestamp()
	for _, id := range ids {
		if _, done := out[id]; done {
			continue
		}
		r, err := getFile(ctx, tx, env, id)
		if errors.Is(err, errNotFound) || (err == nil && r.Status != StatusReady) {
			return nil, &api.Error{Code: api.CodeValidation, Message: "the value refers to a file the environment does not have ready",
				Diagnostics: []api.Diagnostic{{Code: "file_not_ready", Message: "file " + id + " is not a ready file of the environment"}}}
		}
		if err != nil {
			return nil, err
		}
		ok := a.Environment || r.Origin.RunID == run || (a.OriginKind != "" && r.Origin.Kind == a.OriginKind && r.Origin.ID == a.OriginID)
		if !ok {
			if ok, err = referenced(ctx, tx, id, run); err != nil {
				return nil, err
			}
		}
		if !ok {
			return nil, api.Forbidden("the caller may not read file %s: it needs file.read in the environment, or a file of its own task", id)
		}
		if err := addRef(ctx, tx, id, run, now); err != nil {
			return nil, err
		}
		out[id] = engine.FileMeta{Name: r.Name, Size: r.Size, SHA256: r.SHA256, MediaType: r.MediaType}
	}
	return out, nil
}
