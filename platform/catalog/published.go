package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Querier is what a read of published versions needs: a reader pool
// (*sql.DB) or a write transaction (*sql.Tx).
type Querier interface {
	querier
}

// ErrVersionNotFound is returned by PublishedVersion when the project has
// no published version with that id.
var ErrVersionNotFound = errors.New("catalog: published version not found")

// PublishedVersion reads a published version of any kind by id within a
// project, for packages that bind published versions (activations).
// Published versions never change, so the result may be kept.
func PublishedVersion(ctx context.Context, q Querier, project, id string) (Version, error) {
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
