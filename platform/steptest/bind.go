package steptest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/agentbridge/bridge/platform/activation"
	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/catalog"
)

// draft is a compiled draft revision.
type draft struct {
	art           artifact
	full          []byte
	source        string
	catalogDigest string
}

// compileDraft reads the source saved at revision of a draft of the
// path's project and compiles it against the project's catalog; refusals
// are 422 code at /draft_id or /draft_revision.
func (s *Service) compileDraft(ctx context.Context, sc auth.Scope, code, id string, revision int64) (draft, error) {
	r := s.db.Reader()
	src, err := catalog.DraftSource(ctx, r, sc.Tenant, sc.Project, id, revision)
	switch {
	case errors.Is(err, catalog.ErrDraftNotFound):
		return draft{}, at422(code, "/draft_id", "the project has no draft with that id")
	case errors.Is(err, catalog.ErrDraftRetired):
		return draft{}, at422(code, "/draft_id", "the draft is retired")
	case errors.Is(err, catalog.ErrDraftRevision):
		return draft{}, at422(code, "/draft_revision", "the draft has no saved revision %d", revision)
	case err != nil:
		return draft{}, err
	}
	res, digest, err := catalog.CompileForProject(ctx, r, sc.Project, []byte(src))
	if err != nil {
		return draft{}, err
	}
	if !res.OK {
		var ae *api.Error
		if errors.As(catalog.CompileProblem(res), &ae) {
			ae.Code, ae.Message = code, "the draft revision does not compile against the project's catalog"
			return draft{}, ae
		}
	}
	a, err := decodeArtifact(res.Artifact)
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			ae.Code = code
		}
		return draft{}, err
	}
	return draft{art: a, full: res.Artifact, source: src, catalogDigest: digest}, nil
}

// binding is a test artifact stored with its test activation.
type binding struct {
	activationID, versionID, digest string
}

// bind stores art (compiled from d) as a test version with an active test
// activation in tx, for principal by.
func (s *Service) bind(ctx context.Context, tx *sql.Tx, sc auth.Scope, d draft, art []byte, defaults json.RawMessage, bindings map[string]string, by string) (binding, error) {
	at := s.timestamp()
	vid := s.newID()
	defID, digest, err := catalog.InsertTestVersion(ctx, tx, catalog.TestVersion{ID: vid, Tenant: sc.Tenant, Project: sc.Project,
		WorkflowID: d.art.workflowID, Version: d.art.version, Artifact: art, Source: d.source, CatalogDigest: d.catalogDigest, By: by, At: at})
	if err != nil {
		return binding{}, err
	}
	aid := s.newID()
	if err := activation.InsertTest(ctx, tx, activation.TestBinding{ID: aid, Tenant: sc.Tenant, Project: sc.Project, Environment: sc.Environment,
		PublishedVersionID: vid, WorkflowID: defID, WorkflowVersion: d.art.version, Digest: digest, InputDefaults: defaults,
		Bindings: bindings, By: by, At: at}); err != nil {
		return binding{}, err
	}
	return binding{activationID: aid, versionID: vid, digest: digest}, nil
}

// checkBindings applies the activation rules to connection or release
// bindings: at most 100, names 1..200 characters, values canonical UUIDs.
func checkBindings(field string, m map[string]string) error {
	if len(m) > maxBindings {
		return api.Invalid("/"+field, "at most %d bindings", maxBindings)
	}
	for name, id := range m {
		if name == "" || len([]rune(name)) > maxBindingName {
			return api.Invalid("/"+field, "a binding name has 1 to %d characters", maxBindingName)
		}
		if !auth.IsCanonicalUUID(id) {
			return api.Invalid("/"+field+"/"+name, "a binding names a connection or release by canonical UUID")
		}
	}
	return nil
}

// Binding limits (as activations').
const (
	maxBindings    = 100
	maxBindingName = 200
)

// retire retires a test activation now (its runs stay readable).
func (s *Service) retire(ctx context.Context, tx *sql.Tx, env, activationID, by, reason string) error {
	return activation.RetireTest(ctx, tx, env, activationID, by, reason, s.timestamp())
}

// startProblem keeps the engine's refusal of a test run start (422 input,
// 429 capacity) and hides an internal one.
func startProblem(err error) error {
	var ae *api.Error
	if errors.As(err, &ae) && !ae.IsInternal() {
		return ae
	}
	return err
}
