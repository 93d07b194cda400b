package engine

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// FileRefs checks the files that run values refer to (file.Service
// implements it; docs/workflow-language.md, "Files").
type FileRefs interface {
	// Attach checks, in tx, that every file id is a ready file of env the
	// caller may read (a, else 403 PF-FORBIDDEN; an unknown file is 422
	// PF-VALIDATION), records that run refers to it, and answers each
	// file's metadata by id.
	Attach(ctx context.Context, tx *sql.Tx, env, run string, ids []string, a FileAccess) (map[string]FileMeta, error)
}

// FileAccess says which files a caller may put into a run's values: every
// file of the environment (it holds file.read there), or the files of one
// human task or worker task (OriginKind human_task or task, OriginID), and
// in every case the files the run already refers to or that its tasks
// created.
type FileAccess struct {
	Environment          bool
	OriginKind, OriginID string
}

// FileMeta is what a file reference value holds besides file_id once the
// engine accepted it.
type FileMeta struct {
	Name      string `json:"name"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	MediaType string `json:"media_type"`
}

// UseFiles makes the engine check file references with f (set once, before
// the routes serve).
func (s *Service) UseFiles(f FileRefs) { s.files = f }

// mayReadFiles reports whether the caller holds file.read in the scope
// (not recorded: it widens what a value may refer to, and a refusal is
// answered by the file check).
func mayReadFiles(c *api.Call, sc auth.Scope) bool {
	return c.Caller != nil && auth.Authorize(c.Caller.Grants, c.Caller.Principal, auth.CapFileRead, sc).Allowed
}

// attachFiles checks the file references of value (at the pointers ptrs)
// for run and answers value with each reference completed as
// {file_id, name, size, sha256, media_type}. A reference that is not an
// object with a file id is 422 PF-VALIDATION at its pointer (prefix is
// the value's pointer in the request body).
func (s *Service) attachFiles(ctx context.Context, tx *sql.Tx, env, run, prefix string, value json.RawMessage, ptrs []string, a FileAccess) (json.RawMessage, error) {
	if len(ptrs) == 0 || len(bytes.TrimSpace(value)) == 0 || s.files == nil {
		return value, nil
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, api.Invalid(prefix, "not valid JSON")
	}
	type ref struct {
		obj map[string]any
		id  string
	}
	var refs []ref
	var walkErr error
	for _, p := range ptrs {
		visit(v, splitPointer(p), prefix, func(x any, at string) {
			if x == nil || walkErr != nil {
				return
			}
			m, ok := x.(map[string]any)
			id, _ := m["file_id"].(string)
			if !ok || !auth.IsCanonicalUUID(id) {
				walkErr = api.Invalid(at, "a file reference is an object whose file_id is a file of the environment (a canonical lowercase UUID)")
				return
			}
			refs = append(refs, ref{m, id})
		})
	}
	if walkErr != nil {
		return nil, walkErr
	}
	if len(refs) == 0 {
		return value, nil
	}
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.id
	}
	meta, err := s.files.Attach(ctx, tx, env, run, ids, a)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		m := meta[r.id]
		clear(r.obj)
		r.obj["file_id"], r.obj["name"], r.obj["size"], r.obj["sha256"], r.obj["media_type"] = r.id, m.Name, m.Size, m.SHA256, m.MediaType
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("engine: encode value: %w", err)
	}
	return out, nil
}

// splitPointer splits a JSON Pointer into its unescaped segments.
func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs
}

// visit calls fn with every value of v at the segments ("*": any element
// or member) and its pointer.
func visit(v any, segs []string, at string, fn func(any, string)) {
	if len(segs) == 0 {
		fn(v, at)
		return
	}
	seg, rest := segs[0], segs[1:]
	esc := func(k string) string { return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1") }
	switch x := v.(type) {
	case map[string]any:
		if seg == "*" {
			for k, e := range x {
				visit(e, rest, at+"/"+esc(k), fn)
			}
		} else if e, ok := x[seg]; ok {
			visit(e, rest, at+"/"+esc(seg), fn)
		}
	case []any:
		if seg != "*" {
			return
		}
		for i, e := range x {
			visit(e, rest, at+"/"+strconv.Itoa(i), fn)
		}
	}
}
