package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Querier is what a read needs: the reader pool (*sql.DB), a write
// transaction (*sql.Tx) or a pinned connection (*sql.Conn). Every
// subsystem's store functions take it, so one read path serves both a
// plain read and a read inside a write. Prepared statements are cached
// below database/sql (stmtcache.go), so all three reuse them alike.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ Querier = (*sql.DB)(nil)
	_ Querier = (*sql.Tx)(nil)
	_ Querier = (*sql.Conn)(nil)
)

// OneRow is the answer of a read of one row: sql.ErrNoRows becomes
// notFound (the caller's coded error), another error is wrapped with what.
func OneRow(err, notFound error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return notFound
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}
