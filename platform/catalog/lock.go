package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/agentbridge/bridge/platform/lang"
	"github.com/agentbridge/bridge/store"
)

// installedAdapters are the connector adapters this server runs besides the
// language's built-in http: they appear in every project's catalog lock.
var installedAdapters = []lang.CatalogAdapter{{ID: "echo", Version: "1.0.0"}, {ID: "noop", Version: "1.0.0"}}

// baseLock is a lock with the installed adapters and nothing published.
func baseLock() *lang.CatalogLock {
	return &lang.CatalogLock{Definitions: []lang.CatalogEntry{}, Tasks: []lang.CatalogTask{},
		Adapters: append([]lang.CatalogAdapter(nil), installedAdapters...), Schemas: []lang.CatalogSchema{}}
}

// projectLock builds the project's current catalog lock from its published
// versions: every version as a definition, the task queues of worker-bound
// actions and the installed adapters.
func projectLock(ctx context.Context, q store.Querier, project string) (*lang.CatalogLock, error) {
	versions, err := listVersions(ctx, q, project, "", "", "", 0)
	if err != nil {
		return nil, err
	}
	l := baseLock()
	queues := map[string]bool{}
	for _, v := range versions {
		e, queue, err := entryOf(v)
		if err != nil {
			return nil, fmt.Errorf("catalog: published version %s: %w", v.ID, err)
		}
		l.Definitions = append(l.Definitions, e)
		if queue != "" {
			queues[queue] = true
		}
	}
	for q := range queues {
		l.Tasks = append(l.Tasks, lang.CatalogTask{Queue: q})
	}
	sort.Slice(l.Tasks, func(i, j int) bool { return l.Tasks[i].Queue < l.Tasks[j].Queue })
	return l, nil
}

// artifactFields are the parts of an artifact a catalog entry needs.
type artifactFields struct {
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	SideEffect string          `json:"sideEffect"`
	TimeoutMs  *int64          `json:"timeoutMs"`
	DeadlineMs *int64          `json:"deadlineMs"`
	Retry      *struct {
		MaxAttempts        int      `json:"maxAttempts"`
		InitialIntervalMs  int64    `json:"initialIntervalMs"`
		BackoffCoefficient float64  `json:"backoffCoefficient"`
		MaxIntervalMs      int64    `json:"maxIntervalMs"`
		NonRetryable       []string `json:"nonRetryable"`
	} `json:"retry"`
	Binding *struct {
		Type  string `json:"type"`
		Queue string `json:"queue"`
	} `json:"binding"`
	Adapter string `json:"adapter"`
	Actions []struct {
		Name string `json:"name"`
	} `json:"actions"`
}

// entryOf derives the catalog entry of a published version from its
// artifact, and the worker task queue of a worker-bound action.
func entryOf(v Version) (lang.CatalogEntry, string, error) {
	var a artifactFields
	if err := json.Unmarshal(v.Artifact, &a); err != nil {
		return lang.CatalogEntry{}, "", fmt.Errorf("decode artifact: %w", err)
	}
	e := lang.CatalogEntry{Kind: v.Kind, ID: v.DefinitionID, Version: v.Version, PublishedVersionID: v.ID, Digest: v.Digest,
		InputSchema: schemaOrNil(a.Input), OutputSchema: schemaOrNil(a.Output)}
	queue := ""
	switch v.Kind {
	case lang.KindAction:
		e.SideEffect = a.SideEffect
		if a.TimeoutMs != nil {
			e.TimeoutMs = *a.TimeoutMs
		}
		if a.DeadlineMs != nil {
			e.DeadlineMs = *a.DeadlineMs
		}
		if r := a.Retry; r != nil {
			e.Retry = &lang.CatalogRetryPolicy{MaxAttempts: r.MaxAttempts, InitialIntervalMs: r.InitialIntervalMs,
				BackoffCoefficient: r.BackoffCoefficient, MaxIntervalMs: r.MaxIntervalMs, NonRetryable: r.NonRetryable}
			if len(e.Retry.NonRetryable) == 0 {
				e.Retry.NonRetryable = nil
			}
		}
		if a.Binding != nil && a.Binding.Type == "worker" {
			queue = a.Binding.Queue
		}
	case lang.KindConnector:
		e.Adapter = a.Adapter
		for _, op := range a.Actions {
			e.Operations = append(e.Operations, op.Name)
		}
	}
	return e, queue, nil
}

// schemaOrNil drops an absent (null) schema.
func schemaOrNil(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// ProjectLock is the project's current catalog lock (what GET P/catalog
// answers), for the editor host (platform/sim), which compiles local
// sources against it without calling its own HTTP routes.
func ProjectLock(ctx context.Context, q store.Querier, project string) (*lang.CatalogLock, error) {
	return projectLock(ctx, q, project)
}

// BaseLock is the lock of a project without published versions: the
// installed adapters only.
func BaseLock() *lang.CatalogLock { return baseLock() }
