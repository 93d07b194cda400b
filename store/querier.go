package store

import (
	"context"
	"database/sql"
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
