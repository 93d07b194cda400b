package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/platform/lang"
	"github.com/agentbridge/bridge/store"
)

// Built-in adapters the engine completes in process.
const (
	adapterEcho = "echo"
	adapterNoop = "noop"
)

// program is a loaded workflow with what the engine needs to perform its
// tasks: the adapter of each referenced action bound directly to one.
type program struct {
	p *kernel.Program
	// adapters maps an action reference ("acme/lookup@1") to the adapter
	// its binding names ("" for other bindings).
	adapters map[string]string
	// sec says where its runs' values hold secrets.
	sec secrets
	// files says where they hold file references.
	files kernel.FilePositions
}

// artifactRefs are the parts of a workflow artifact the engine reads.
type artifactRefs struct {
	// References are keyed by kind and reference ("action:acme/lookup@1").
	References map[string]struct {
		Kind               string `json:"kind"`
		ID                 string `json:"id"`
		Version            int    `json:"version"`
		PublishedVersionID string `json:"publishedVersionId"`
	} `json:"references"`
}

// definitionFields are the parts of a referenced definition's artifact the
// lock entry and the engine need.
type definitionFields struct {
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	SideEffect string          `json:"sideEffect"`
	Binding    *struct {
		Type    string `json:"type"`
		Adapter string `json:"adapter"`
	} `json:"binding"`
}

// program answers the loaded program of a published workflow version,
// from the cache or by loading it once (published versions never change).
func (s *Service) program(ctx context.Context, q store.Querier, project, versionID string) (*program, error) {
	s.mu.Lock()
	p, ok := s.programs[versionID]
	s.mu.Unlock()
	if ok {
		return p, nil
	}
	v, err := catalog.PublishedVersion(ctx, q, project, versionID)
	if err != nil {
		return nil, fmt.Errorf("engine: workflow version %s: %w", versionID, err)
	}
	var refs artifactRefs
	if err := json.Unmarshal(v.Artifact, &refs); err != nil {
		return nil, fmt.Errorf("engine: workflow version %s: decode artifact: %w", versionID, err)
	}
	lock := &lang.CatalogLock{Definitions: []lang.CatalogEntry{}, Tasks: []lang.CatalogTask{},
		Adapters: []lang.CatalogAdapter{}, Schemas: []lang.CatalogSchema{}}
	var defs [][]byte
	p = &program{adapters: map[string]string{}}
	keys := make([]string, 0, len(refs.References))
	for k := range refs.References {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		r := refs.References[key]
		if r.PublishedVersionID == "" {
			continue
		}
		d, err := catalog.PublishedVersion(ctx, q, project, r.PublishedVersionID)
		if err != nil {
			return nil, fmt.Errorf("engine: workflow version %s: reference %s@%d: %w", versionID, r.ID, r.Version, err)
		}
		var f definitionFields
		if err := json.Unmarshal(d.Artifact, &f); err != nil {
			return nil, fmt.Errorf("engine: reference %s@%d: decode artifact: %w", r.ID, r.Version, err)
		}
		lock.Definitions = append(lock.Definitions, lang.CatalogEntry{Kind: d.Kind, ID: d.DefinitionID, Version: d.Version,
			PublishedVersionID: d.ID, Digest: d.Digest, InputSchema: nonNull(f.Input), OutputSchema: nonNull(f.Output),
			SideEffect: f.SideEffect})
		if d.Kind == lang.KindAction || d.Kind == lang.KindDecisionTable {
			defs = append(defs, d.Artifact)
		}
		if d.Kind == lang.KindAction && f.Binding != nil && f.Binding.Type == "adapter" {
			p.adapters[fmt.Sprintf("%s@%d", r.ID, r.Version)] = f.Binding.Adapter
		}
	}
	p.p, err = kernel.Load(v.Artifact, kernel.WithCatalog(lock), kernel.WithDefinitions(defs...))
	if err != nil {
		return nil, fmt.Errorf("engine: load workflow version %s: %w", versionID, err)
	}
	p.sec = newSecrets(p.p)
	p.files = p.p.Files()
	s.mu.Lock()
	s.programs[versionID] = p
	s.mu.Unlock()
	return p, nil
}

// nonNull drops an absent (null) schema.
func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// inlineTask answers the first task of st (in task id order) that the
// engine completes in process, and its output: echo answers its input,
// noop an empty object.
func (p *program) inlineTask(st *kernel.State) (string, json.RawMessage, bool) {
	var best string
	var out json.RawMessage
	for id, t := range st.Tasks {
		if t.Status != kernel.TaskRunning || t.Executor != kernel.ExecutorConnector {
			continue
		}
		var o json.RawMessage
		switch p.adapters[t.Ref] {
		case adapterEcho:
			o = t.Input
			if len(o) == 0 {
				o = json.RawMessage("{}")
			}
		case adapterNoop:
			o = json.RawMessage("{}")
		default:
			continue
		}
		if best == "" || id < best {
			best, out = id, o
		}
	}
	return best, out, best != ""
}
