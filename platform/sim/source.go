package sim

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/lang"
)

// Source is how the editor host names what to simulate (camelCase,
// offline): a workflow source or a compiled artifact, the catalog lock to
// compile against (else the installed adapters only), and local
// definition sources (actions, decision tables) that join the lock.
type Source struct {
	Source      *string         `json:"source,omitempty"`
	Artifact    json.RawMessage `json:"artifact,omitempty"`
	Catalog     json.RawMessage `json:"catalog,omitempty"`
	Definitions []string        `json:"definitions,omitempty"`
	// Project names a project of the platform whose current catalog (what
	// GET P/catalog answers) the editor host reads to resolve references,
	// instead of a catalog sent in the request (catalog.read there; 502
	// PF-STUDIO-CATALOG when it cannot be read).
	Project *ProjectRef `json:"project,omitempty"`
}

// ProjectRef names a project of the platform.
type ProjectRef struct {
	Tenant  string `json:"tenant"`
	Project string `json:"project"`
}

// projectCatalog reads a project's current catalog lock for the editor
// host. The project must exist (PF-NOT-FOUND); a catalog the platform
// cannot read is PF-STUDIO-CATALOG.
func (s *Service) projectCatalog(ctx context.Context, ref ProjectRef) (*lang.CatalogLock, error) {
	ok, err := projectExists(ctx, s.db.Reader(), ref.Tenant, ref.Project)
	if err != nil {
		return nil, refuse(CodeStudioCat, "/project", "the platform's catalog is unavailable: %v", err)
	}
	if !ok {
		return nil, refuse(CodeNotFound, "/project", "no project with that id in the tenant")
	}
	lock, err := catalog.ProjectLock(ctx, s.db.Reader(), ref.Project)
	if err != nil {
		return nil, refuse(CodeStudioCat, "/project", "the project's catalog cannot be read: %v", err)
	}
	return lock, nil
}

// projectDefinitions answers the artifacts of the project's actions and
// decision tables that artifact references (the kernel loads them with the
// program), except local ones (by published version id).
func (s *Service) projectDefinitions(ctx context.Context, project string, artifact []byte, local map[string]bool) ([][]byte, error) {
	refs, err := References(artifact)
	if err != nil {
		return nil, err
	}
	var defs [][]byte
	for _, r := range refs {
		if local[r.PublishedVersionID] || (r.Kind != lang.KindAction && r.Kind != lang.KindDecisionTable) {
			continue
		}
		v, err := catalog.PublishedVersion(ctx, s.db.Reader(), project, r.PublishedVersionID)
		if err != nil {
			return nil, refuse(CodeStudioCat, "/project", "the definition %s cannot be read from the project's catalog: %v", r.Key, err)
		}
		defs = append(defs, v.Artifact)
	}
	return defs, nil
}

// CompileSummary is what the editor host says about the compilation.
type CompileSummary struct {
	OK          bool              `json:"ok"`
	Diagnostics []lang.Diagnostic `json:"diagnostics"`
	// Stubs are the mock keys that stood in for effects, in first use
	// order (execute only).
	Stubs []string `json:"stubs"`
}

// localNamespace derives the published version ids of local definitions.
var localNamespace = uuid.MustParse("7b0e3a52-3f7c-4c1e-9d55-5a1c6f3d2e10")

// build compiles or loads what src names. A source that does not compile
// answers the summary with a nil program (execute shows it; sessions
// refuse it with PF-STUDIO-REQUEST).
func (st *studio) build(ctx context.Context, src Source) (*Program, []byte, CompileSummary, error) {
	sum := CompileSummary{Diagnostics: []lang.Diagnostic{}, Stubs: []string{}}
	if (src.Source == nil) == (len(src.Artifact) == 0) {
		return nil, nil, sum, refuse(CodeStudioReq, "", "exactly one of source and artifact is required")
	}
	lock := catalog.BaseLock()
	hasCatalog := len(src.Catalog) > 0 && string(src.Catalog) != "null"
	if src.Project != nil {
		if hasCatalog {
			return nil, nil, sum, refuse(CodeStudioReq, "/project", "name a project or send a catalog, not both")
		}
		l, err := st.svc.projectCatalog(ctx, *src.Project)
		if err != nil {
			return nil, nil, sum, err
		}
		lock = l
	}
	local := map[string]bool{}
	if hasCatalog {
		l, err := lang.ParseCatalogLock(src.Catalog)
		if err != nil {
			return nil, nil, sum, refuse(CodeStudioReq, "/catalog", "the catalog lock does not parse: %v", err)
		}
		lock = l
	}
	var defs [][]byte
	for i, d := range src.Definitions {
		r := lang.Compile([]byte(d), lang.Options{Filename: fmt.Sprintf("definitions[%d]", i), Catalog: lock})
		if !r.OK {
			sum.Diagnostics = append(sum.Diagnostics, r.Diagnostics...)
			return nil, nil, sum, refuse(CodeStudioReq, fmt.Sprintf("/definitions/%d", i), "the local definition does not compile")
		}
		var f struct {
			Kind       string          `json:"kind"`
			ID         string          `json:"id"`
			Version    int             `json:"version"`
			Input      json.RawMessage `json:"input"`
			Output     json.RawMessage `json:"output"`
			SideEffect string          `json:"sideEffect"`
		}
		if err := json.Unmarshal(r.Artifact, &f); err != nil {
			return nil, nil, sum, fmt.Errorf("sim: local definition %d: %w", i, err)
		}
		entry := lang.CatalogEntry{Kind: f.Kind, ID: f.ID, Version: f.Version, Digest: r.Digest,
			PublishedVersionID: uuid.NewSHA1(localNamespace, []byte(r.Digest)).String(),
			InputSchema:        nonNull(f.Input), OutputSchema: nonNull(f.Output), SideEffect: f.SideEffect}
		replaced := false
		for j, e := range lock.Definitions {
			if e.Kind == entry.Kind && e.ID == entry.ID && e.Version == entry.Version {
				if e.Digest != entry.Digest {
					return nil, nil, sum, refuse(CodeStudioCatCfl, fmt.Sprintf("/definitions/%d", i),
						"the local %s %s@%d differs from the catalog's (%s): publish a new version", f.Kind, f.ID, f.Version, e.Digest)
				}
				lock.Definitions[j], replaced = entry, true
			}
		}
		if !replaced {
			lock.Definitions = append(lock.Definitions, entry)
		}
		local[entry.PublishedVersionID] = true
		defs = append(defs, r.Artifact)
	}
	artifact := []byte(src.Artifact)
	if src.Source != nil {
		r := lang.Compile([]byte(*src.Source), lang.Options{Filename: "workflow.yaml", Catalog: lock})
		sum.Diagnostics = append(sum.Diagnostics, r.Diagnostics...)
		if !r.OK {
			return nil, nil, sum, nil
		}
		artifact = r.Artifact
	}
	sum.OK = true
	if src.Project != nil {
		more, err := st.svc.projectDefinitions(ctx, src.Project.Project, artifact, local)
		if err != nil {
			return nil, nil, sum, err
		}
		defs = append(defs, more...)
	}
	p, err := LoadProgram(artifact, lock, defs)
	if err != nil {
		return nil, nil, sum, refuse(CodeStudioReq, "/artifact", "%v", err)
	}
	return p, artifact, sum, nil
}
