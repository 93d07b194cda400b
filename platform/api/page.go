package api

import (
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/agentbridge/bridge/httpx"
)

// Page limits (docs/platform-api.md, "Limits").
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 100
)

// Page is the envelope of every list: items in stable id order and an
// opaque cursor for the next page (null on the last page).
type Page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// PageQuery is a validated page request: how many items and the position
// after which the page starts ("" for the first page).
type PageQuery struct {
	Limit int
	// After is the id of the last item of the previous page.
	After string

	scope   string
	cursors *httpx.Cursors
}

// cursorPosition is what a cursor holds.
type cursorPosition struct {
	After string `json:"a"`
}

// PageQuery reads the limit and cursor query parameters of a list of
// collection under the path's scope, filtered by filters (name to
// normalized value; include every filter, with "" for unset ones). A
// cursor is valid only for the same tenant, project, environment,
// collection and filters; anything else (forged, truncated, from another
// list or other filters, empty) answers 422 PF-VALIDATION.
func (c *Call) PageQuery(collection string, filters map[string]string) (PageQuery, error) {
	q := PageQuery{Limit: DefaultPageLimit, cursors: c.api.opts.Cursors, scope: cursorScope(collection, c, filters)}
	if q.cursors == nil {
		return q, &Error{Code: CodeInternal, Message: "internal error"}
	}
	vals := c.R.URL.Query()
	if raw, ok, err := single(vals, "limit"); err != nil {
		return q, err
	} else if ok {
		n, err := parseLimit(raw)
		if err != nil {
			return q, err
		}
		q.Limit = n
	}
	if raw, ok, err := single(vals, "cursor"); err != nil {
		return q, err
	} else if ok {
		var pos cursorPosition
		if err := q.cursors.Open(q.scope, raw, &pos); err != nil || pos.After == "" {
			return q, InvalidParameter(CodeValidation, "cursor", "the cursor is invalid, or was issued for another list, scope or filters")
		}
		q.After = pos.After
	}
	return q, nil
}

// Query returns the single value of a query parameter ("" when absent);
// a repeated parameter answers 422 PF-VALIDATION.
func (c *Call) Query(name string) (string, error) {
	v, _, err := single(c.R.URL.Query(), name)
	return v, err
}

func single(vals url.Values, name string) (string, bool, error) {
	vs, ok := vals[name]
	if !ok {
		return "", false, nil
	}
	if len(vs) != 1 {
		return "", false, InvalidParameter(CodeValidation, name, "the %s query parameter may appear once", name)
	}
	return vs[0], true, nil
}

func parseLimit(raw string) (int, error) {
	bad := InvalidParameter(CodeValidation, "limit", "limit must be a whole number from 1 to %d", MaxPageLimit)
	if raw == "" || len(raw) > 3 {
		return 0, bad
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return 0, bad
		}
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > MaxPageLimit {
		return 0, bad
	}
	return n, nil
}

func cursorScope(collection string, c *Call, filters map[string]string) string {
	s := c.PathScope()
	var b strings.Builder
	b.WriteString("platform-page-v1|")
	b.WriteString(url.QueryEscape(collection))
	b.WriteString("|t=" + s.Tenant + "|p=" + s.Project + "|e=" + s.Environment + "|")
	keys := make([]string, 0, len(filters))
	for k := range filters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(filters[k]) + "&")
	}
	return b.String()
}

// Fetch is how many rows a handler should read: one more than the limit,
// to know whether another page follows.
func (q PageQuery) Fetch() int { return q.Limit + 1 }

// MakePage builds the page from rows read in ascending id order after
// q.After, at most q.Fetch() of them; id returns an item's id.
func MakePage[T any](q PageQuery, rows []T, id func(T) string) (Page[T], error) {
	p := Page[T]{Items: rows}
	if p.Items == nil {
		p.Items = []T{}
	}
	if len(rows) > q.Limit {
		p.Items = rows[:q.Limit]
		cur, err := q.cursors.Sign(q.scope, cursorPosition{After: id(p.Items[len(p.Items)-1])})
		if err != nil {
			return p, err
		}
		p.NextCursor = &cur
	}
	return p, nil
}
