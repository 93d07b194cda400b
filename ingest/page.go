package ingest

import (
	"net/http"
	"strconv"

	"github.com/agentbridge/bridge/httpx"
)

// pageKey is the position after which the next page starts.
type pageKey struct {
	Time string `json:"t"`
	ID   string `json:"i"`
}

// Cursors are httpx.Cursors keyed from the data directory's cursor key, so
// they survive daemon restarts, and bound to the filters of the listing that
// issued them (ingest/README.md).
func (s *Service) encodeCursor(k pageKey, filter string) string {
	// A pageKey of two strings always marshals.
	cur, _ := s.cursors.Sign(httpx.CursorScope("ingest-page-v1", filter), k)
	return cur
}

var errBadCursor = newError("WH-INVALID-CURSOR", "invalid_cursor", "the cursor is invalid or was issued for other filters")

func (s *Service) decodeCursor(raw, filter string) (*pageKey, error) {
	if raw == "" {
		return nil, nil
	}
	var k pageKey
	if err := s.cursors.Open(httpx.CursorScope("ingest-page-v1", filter), raw, &k); err != nil {
		return nil, errBadCursor
	}
	return &k, nil
}

const (
	defaultPageSize = 50
	maxPageSize     = 500
)

// pageLimit reads ?limit= (1..maxPageSize).
func pageLimit(r *http.Request) (int, error) {
	raw := r.URL.Query().Get("limit")
	if raw == "" {
		return defaultPageSize, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxPageSize {
		return 0, newError("WH-INVALID-PARAMETER", "invalid_parameter", "limit must be a whole number from 1 to 500")
	}
	return n, nil
}
