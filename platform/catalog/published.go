package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/store"
)

// ErrVersionNotFound is returned by PublishedVersion when the project has
// no published version with that id.
var ErrVersionNotFound = errors.New("catalog: published version not found")

// PublishedVersion reads a published version of any kind by id within a
// project, for packages that bind published versions (activations).
// Published versions never change, so the result may be kept.
func PublishedVersion(ctx context.Context, q store.Querier, project, id string) (Version, error) {
	v, err := scanVersion(q.QueryRowContext(ctx, `SELECT `+versionCols+` FROM platform_definition_versions
		WHERE id = ? AND project_id = ?`, id, project))
	if errors.Is(err, sql.ErrNoRows) {
		return v, ErrVersionNotFound
	}
	if err != nil {
		return v, fmt.Errorf("catalog: read published version: %w", err)
	}
	return v, nil
}

// ProjectVersions reads every published version of a project (test
// versions left out), in id order: the compatibility scan checks each.
func ProjectVersions(ctx context.Context, q store.Querier, project string) ([]Version, error) {
	return listVersions(ctx, q, project, "", "", "", 0)
}

// InstalledAdapters are the connector adapters this server runs: the
// language's built-in http and the installed ones of every catalog lock.
func InstalledAdapters() []string {
	return append([]string{"http"}, adapterNamesOf(installedAdapters)...)
}
