package callbacks

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/agentbridge/bridge/httpx"
)

// filterWith runs a FilterRequest against a resource.
func filterWith[T any](ctx context.Context, s *Service, r *resource, columns string, scan rowScanner[T], req FilterRequest) (*PaginationResponse[T], error) {
	c, err := r.compile(req, s.cursors)
	if err != nil {
		return nil, err
	}
	return runFilter(ctx, s.db.Reader(), r, columns, c, s.cursors, scan)
}

// rowScanner returns the destinations of one row and a function that builds
// the item once they are filled.
type rowScanner[T any] func() (dests []any, build func() (T, error))

// runFilter executes a compiled filter on r and builds the page.
func runFilter[T any](ctx context.Context, db *sql.DB, r *resource, columns string, c *compiled, cursors *httpx.Cursors, scan rowScanner[T]) (*PaginationResponse[T], error) {
	where, args := c.whereSQL(false)
	var total int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+r.table+where, args...).Scan(&total); err != nil {
		return nil, fmt.Errorf("callbacks: count %s: %w", r.name, err)
	}
	where, args = c.whereSQL(true)
	sortCols := make([]string, len(c.order))
	for i, k := range c.order {
		sortCols[i] = k.col
	}
	q := "SELECT " + columns + ", " + strings.Join(sortCols, ", ") + " FROM " + r.table + where + c.orderSQL() + " LIMIT ?"
	args = append(args, c.size+1)
	if c.byPage && c.page > 0 {
		q += " OFFSET ?"
		args = append(args, c.page*c.size)
	}
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("callbacks: filter %s: %w", r.name, err)
	}
	defer rows.Close()
	out := &PaginationResponse[T]{Content: []T{}, Size: c.size, TotalElements: total}
	var lastSort []any
	for rows.Next() {
		if len(out.Content) == c.size {
			out.HasNext = true
			break
		}
		dests, build := scan()
		sortVals := make([]any, len(c.order))
		for i := range sortVals {
			dests = append(dests, &sortVals[i])
		}
		if err := rows.Scan(dests...); err != nil {
			return nil, fmt.Errorf("callbacks: filter %s: %w", r.name, err)
		}
		item, err := build()
		if err != nil {
			return nil, err
		}
		out.Content = append(out.Content, item)
		lastSort = sortVals
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("callbacks: filter %s: %w", r.name, err)
	}
	if c.byPage {
		p := c.page
		out.Page = &p
	}
	out.TotalPages = (total + int64(c.size) - 1) / int64(c.size)
	if out.HasNext && lastSort != nil {
		if out.NextCursor, err = sealCursor(cursors, c.scope, lastSort); err != nil {
			return nil, fmt.Errorf("callbacks: filter %s: cursor: %w", r.name, err)
		}
	}
	return out, nil
}
