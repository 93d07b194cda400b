package catalog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/platform/lang"
	"github.com/agentbridge/bridge/store"
)

// Test versions hold the compiled artifacts that step tests and draft test
// activations run (docs/platform-api.md, "Step tests and test
// activations"). Runs and activations bind published version ids, so a
// tested draft is stored as a version row too; its definition id carries
// TestMarker, which no definition id can contain, and every catalog read
// (lists, the catalog lock, reads by id, the duplicate check) leaves such
// rows out. Only PublishedVersion, which the engine loads programs with,
// sees them.

// TestMarker separates a test version's workflow id from its test id:
// "acme/flow#test-<uuid>".
const TestMarker = "#test-"

// notTest is the SQL condition that leaves test versions out.
const notTest = ` AND instr(definition_id, '#') = 0`

// Errors of DraftSource.
var (
	ErrDraftNotFound = errors.New("catalog: no such draft in the project")
	ErrDraftRevision = errors.New("catalog: the draft has no saved revision with that number")
	ErrDraftRetired  = errors.New("catalog: the draft is retired")
)

// DraftSource answers the source saved at revision of a draft of the
// project (not retired).
func DraftSource(ctx context.Context, q store.Querier, tenant, project, draft string, revision int64) (string, error) {
	d, err := getDraft(ctx, q, draft)
	if errors.Is(err, errNotFound) || (err == nil && (d.Tenant != tenant || d.Project != project)) {
		return "", ErrDraftNotFound
	}
	if err != nil {
		return "", err
	}
	if d.RetiredAt.Valid {
		return "", ErrDraftRetired
	}
	var src string
	err = q.QueryRowContext(ctx, `SELECT source FROM platform_draft_revisions WHERE draft_id = ? AND revision = ? AND action = 'save'`,
		draft, revision).Scan(&src)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrDraftRevision
	}
	if err != nil {
		return "", fmt.Errorf("catalog: read draft revision: %w", err)
	}
	return src, nil
}

// CompileForProject compiles src against the project's current catalog
// lock, as publication does, and answers the result and the lock's digest.
func CompileForProject(ctx context.Context, q store.Querier, project string, src []byte) (lang.Result, string, error) {
	lock, err := projectLock(ctx, q, project)
	if err != nil {
		return lang.Result{}, "", err
	}
	digest, err := lock.Digest()
	if err != nil {
		return lang.Result{}, "", err
	}
	return lang.Compile(src, lang.Options{Catalog: lock}), digest, nil
}

// CompileProblem is the 422 PF-VALIDATION problem of a source that does not
// compile (the compiler's diagnostics and result), as publication answers.
func CompileProblem(res lang.Result) error { return compileProblem(res) }

// TestVersion is a test artifact to store with InsertTestVersion.
type TestVersion struct {
	ID, Tenant, Project string
	// WorkflowID is the artifact's own workflow id; the row's definition
	// id is WorkflowID + TestMarker + ID.
	WorkflowID    string
	Version       int
	Artifact      []byte
	Source        string
	CatalogDigest string
	By            string
	At            time.Time
}

// InsertTestVersion stores a test artifact in tx and answers its stored
// definition id and digest.
func InsertTestVersion(ctx context.Context, tx *sql.Tx, t TestVersion) (string, string, error) {
	sum := sha256.Sum256(t.Artifact)
	v := Version{ID: t.ID, Kind: lang.KindWorkflow, DefinitionID: t.WorkflowID + TestMarker + t.ID, Version: t.Version,
		Digest: "sha256:" + hex.EncodeToString(sum[:]), Artifact: json.RawMessage(t.Artifact), Source: t.Source,
		CatalogDigest: t.CatalogDigest, PublishedAt: t.At, PublishedBy: t.By}
	if err := insertVersion(ctx, tx, t.Tenant, t.Project, v); err != nil {
		return "", "", err
	}
	return v.DefinitionID, v.Digest, nil
}
