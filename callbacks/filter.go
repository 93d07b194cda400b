package callbacks

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
)

// FilterRequest selects, orders and pages the items of a resource; it is the
// body of every POST /{resource}/filter.
type FilterRequest struct {
	Filters []FieldFilter `json:"filters,omitempty" schema:"maxItems=20" doc:"all filters must hold (AND)"`
	Sort    []SortOrder   `json:"sort,omitempty" schema:"maxItems=3" doc:"default: the resource's default order; id breaks ties"`
	Page    *int          `json:"page,omitempty" schema:"minimum=0,maximum=100000" doc:"0-based page (offset paging); not with cursor"`
	Size    *int          `json:"size,omitempty" schema:"minimum=1,maximum=500" doc:"items per page, default 20"`
	Cursor  string        `json:"cursor,omitempty" schema:"maxLength=4096" doc:"nextCursor of a previous answer with the same filters and sort (keyset paging)"`
}

// FieldFilter is one condition on a field.
type FieldFilter struct {
	Field    string            `json:"field"`
	Operator string            `json:"operator" schema:"enum=eq|ne|in|notIn|contains|startsWith|gt|gte|lt|lte"`
	Value    json.RawMessage   `json:"value,omitempty" doc:"operand of every operator except in and notIn; times are RFC 3339"`
	Values   []json.RawMessage `json:"values,omitempty" schema:"maxItems=100" doc:"operands of in and notIn"`
}

// SortOrder orders by one field.
type SortOrder struct {
	Field     string `json:"field"`
	Direction string `json:"direction,omitempty" schema:"enum=ASC|DESC" doc:"default ASC"`
}

// PaginationResponse is one page of a resource.
type PaginationResponse[T any] struct {
	Content       []T    `json:"content"`
	Page          *int   `json:"page,omitempty" doc:"absent in cursor paging"`
	Size          int    `json:"size"`
	TotalElements int64  `json:"totalElements" doc:"items matching the filters, over all pages"`
	TotalPages    int64  `json:"totalPages"`
	HasNext       bool   `json:"hasNext"`
	NextCursor    string `json:"nextCursor,omitempty" doc:"opaque; valid with the same filters and sort, across daemon restarts"`
}

// Paging bounds.
const (
	defaultPageSize = 20
	maxPageSize     = 500
	maxPage         = 100_000
	maxFilters      = 20
	maxSorts        = 3
	maxInValues     = 100
	maxFilterString = 1000
)

type fieldKind int

const (
	kString  fieldKind = iota
	kInt               // INTEGER column
	kBool              // INTEGER 0/1 column
	kTime              // INTEGER Unix ms column, RFC 3339 in filters
	kStrings           // JSON array column: only contains (element equality)
)

// field maps a JSON field of a resource to its column.
type field struct {
	col      string
	kind     fieldKind
	sortable bool
	// ref, when set, is a subquery "SELECT key FROM table WHERE <column>"
	// translating the JSON value to col (eventId -> event_seq): the
	// field is stored by reference and filtered with eq, ne, in and notIn.
	ref string
}

// resource describes a table for the filter engine.
type resource struct {
	name        string
	table       string
	fields      map[string]field
	defaultSort []SortOrder
}

// compiled is a validated FilterRequest turned into SQL.
type compiled struct {
	where  []string
	args   []any
	order  []sortKey
	page   int
	size   int
	cursor []any  // last row's sort values, nil without cursor
	scope  string // what the page's cursors are bound to
	byPage bool
}

type sortKey struct {
	col  string
	kind fieldKind
	desc bool
}

func badFilter(format string, args ...any) error {
	return &Error{Code: EInvalid, Message: fmt.Sprintf(format, args...)}
}

// compile validates req against r and builds the SQL conditions.
func (r *resource) compile(req FilterRequest, cursors *httpx.Cursors) (*compiled, error) {
	c := &compiled{size: defaultPageSize}
	if req.Size != nil {
		if *req.Size < 1 || *req.Size > maxPageSize {
			return nil, badFilter("size must be 1 to %d, got %d", maxPageSize, *req.Size)
		}
		c.size = *req.Size
	}
	if req.Page != nil {
		if *req.Page < 0 || *req.Page > maxPage {
			return nil, badFilter("page must be 0 to %d, got %d", maxPage, *req.Page)
		}
		if req.Cursor != "" {
			return nil, badFilter("page and cursor cannot be combined")
		}
		c.page = *req.Page
	}
	c.byPage = req.Cursor == ""
	if len(req.Filters) > maxFilters {
		return nil, badFilter("at most %d filters", maxFilters)
	}
	for i, f := range req.Filters {
		if err := r.compileFilter(c, f); err != nil {
			return nil, badFilter("filters[%d]: %v", i, err)
		}
	}
	sorts := req.Sort
	if len(sorts) == 0 {
		sorts = r.defaultSort
	}
	if len(sorts) > maxSorts {
		return nil, badFilter("at most %d sort orders", maxSorts)
	}
	seen := map[string]bool{}
	for i, s := range sorts {
		f, ok := r.fields[s.Field]
		if !ok || !f.sortable {
			return nil, badFilter("sort[%d]: cannot sort %s by %q (sortable: %s)", i, r.name, s.Field, strings.Join(r.sortable(), ", "))
		}
		if seen[s.Field] {
			return nil, badFilter("sort[%d]: %q is sorted twice", i, s.Field)
		}
		seen[s.Field] = true
		var desc bool
		switch strings.ToUpper(s.Direction) {
		case "", "ASC":
		case "DESC":
			desc = true
		default:
			return nil, badFilter("sort[%d]: direction must be ASC or DESC", i)
		}
		c.order = append(c.order, sortKey{col: f.col, kind: f.kind, desc: desc})
	}
	// id makes the order total, which keyset paging needs.
	last := c.order[len(c.order)-1]
	if last.col != "id" {
		c.order = append(c.order, sortKey{col: "id", kind: kString, desc: last.desc})
	}
	c.scope = cursorScope(r.name, req)
	if req.Cursor != "" {
		vals, err := openCursor(cursors, req.Cursor, c.scope, len(c.order))
		if err != nil {
			return nil, err
		}
		c.cursor = vals
	}
	return c, nil
}

func (r *resource) sortable() []string {
	var out []string
	for name, f := range r.fields {
		if f.sortable {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func (r *resource) compileFilter(c *compiled, f FieldFilter) error {
	fd, ok := r.fields[f.Field]
	if !ok {
		names := make([]string, 0, len(r.fields))
		for n := range r.fields {
			names = append(names, n)
		}
		slices.Sort(names)
		return fmt.Errorf("unknown field %q (fields: %s)", f.Field, strings.Join(names, ", "))
	}
	op := f.Operator
	if fd.ref != "" {
		return compileRef(c, fd, f)
	}
	allowed := map[fieldKind][]string{
		kString:  {"eq", "ne", "in", "notIn", "contains", "startsWith"},
		kInt:     {"eq", "ne", "in", "notIn", "gt", "gte", "lt", "lte"},
		kTime:    {"eq", "ne", "gt", "gte", "lt", "lte"},
		kBool:    {"eq", "ne"},
		kStrings: {"contains"},
	}[fd.kind]
	if !slices.Contains(allowed, op) {
		return fmt.Errorf("operator %q does not apply to %s (allowed: %s)", op, f.Field, strings.Join(allowed, ", "))
	}
	if op == "in" || op == "notIn" {
		if f.Value != nil {
			return fmt.Errorf("%s takes values, not value", op)
		}
		if len(f.Values) < 1 || len(f.Values) > maxInValues {
			return fmt.Errorf("%s needs 1 to %d values", op, maxInValues)
		}
		marks := make([]string, len(f.Values))
		for i, raw := range f.Values {
			v, err := operand(fd.kind, raw)
			if err != nil {
				return fmt.Errorf("values[%d]: %v", i, err)
			}
			marks[i] = "?"
			c.args = append(c.args, v)
		}
		not := ""
		if op == "notIn" {
			not = "NOT "
		}
		c.where = append(c.where, fmt.Sprintf("%s %sIN (%s)", fd.col, not, strings.Join(marks, ",")))
		return nil
	}
	if f.Values != nil {
		return fmt.Errorf("%s takes value, not values", op)
	}
	if f.Value == nil {
		return fmt.Errorf("value is required")
	}
	kind := fd.kind
	if kind == kStrings {
		kind = kString
	}
	v, err := operand(kind, f.Value)
	if err != nil {
		return err
	}
	switch op {
	case "eq", "ne", "gt", "gte", "lt", "lte":
		sqlOp := map[string]string{"eq": "=", "ne": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
		c.where = append(c.where, fd.col+" "+sqlOp+" ?")
		c.args = append(c.args, v)
	case "contains":
		if fd.kind == kStrings {
			c.where = append(c.where, "EXISTS (SELECT 1 FROM json_each("+fd.col+") WHERE json_each.value = ?)")
			c.args = append(c.args, v)
			break
		}
		c.where = append(c.where, fd.col+` LIKE ? ESCAPE '\'`)
		c.args = append(c.args, "%"+likeEscape(v.(string))+"%")
	case "startsWith":
		c.where = append(c.where, fd.col+` LIKE ? ESCAPE '\'`)
		c.args = append(c.args, likeEscape(v.(string))+"%")
	}
	return nil
}

// compileRef filters a field stored by reference: col [NOT] IN (ref IN (...)).
func compileRef(c *compiled, fd field, f FieldFilter) error {
	vals := f.Values
	switch f.Operator {
	case "eq", "ne":
		if f.Value == nil || f.Values != nil {
			return fmt.Errorf("%s takes value, not values", f.Operator)
		}
		vals = []json.RawMessage{f.Value}
	case "in", "notIn":
		if f.Value != nil || len(vals) < 1 || len(vals) > maxInValues {
			return fmt.Errorf("%s needs 1 to %d values", f.Operator, maxInValues)
		}
	default:
		return fmt.Errorf("operator %q does not apply to %s (allowed: eq, ne, in, notIn)", f.Operator, f.Field)
	}
	marks := make([]string, len(vals))
	for i, raw := range vals {
		v, err := operand(fd.kind, raw)
		if err != nil {
			return err
		}
		marks[i] = "?"
		c.args = append(c.args, v)
	}
	not := ""
	if f.Operator == "ne" || f.Operator == "notIn" {
		not = "NOT "
	}
	c.where = append(c.where, fmt.Sprintf("%s %sIN (%s IN (%s))", fd.col, not, fd.ref, strings.Join(marks, ",")))
	return nil
}

// operand decodes a filter value for a field kind into its SQL argument.
func operand(kind fieldKind, raw json.RawMessage) (any, error) {
	switch kind {
	case kString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errors.New("value must be a string")
		}
		if len(s) > maxFilterString {
			return nil, fmt.Errorf("value must be at most %d bytes", maxFilterString)
		}
		return s, nil
	case kInt:
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, errors.New("value must be a whole number")
		}
		return n, nil
	case kBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, errors.New("value must be true or false")
		}
		return boolInt(b), nil
	case kTime:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errors.New("value must be an RFC 3339 time string")
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, errors.New("value must be an RFC 3339 time such as 2025-01-02T15:04:05Z")
		}
		return store.Millis(t), nil
	}
	return nil, errors.New("unsupported field")
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// whereSQL joins the filter conditions (and the cursor condition when asked).
func (c *compiled) whereSQL(withCursor bool) (string, []any) {
	conds := slices.Clone(c.where)
	args := slices.Clone(c.args)
	if withCursor && c.cursor != nil {
		// (k1, k2, ...) after the cursor in the mixed-direction order.
		var ors []string
		for i, k := range c.order {
			var ands []string
			for j := 0; j < i; j++ {
				ands = append(ands, c.order[j].col+" = ?")
				args = append(args, c.cursor[j])
			}
			op := ">"
			if k.desc {
				op = "<"
			}
			ands = append(ands, k.col+" "+op+" ?")
			args = append(args, c.cursor[i])
			ors = append(ors, "("+strings.Join(ands, " AND ")+")")
		}
		conds = append(conds, "("+strings.Join(ors, " OR ")+")")
	}
	if len(conds) == 0 {
		return "", args
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

func (c *compiled) orderSQL() string {
	parts := make([]string, len(c.order))
	for i, k := range c.order {
		dir := "ASC"
		if k.desc {
			dir = "DESC"
		}
		parts[i] = k.col + " " + dir
	}
	return " ORDER BY " + strings.Join(parts, ", ")
}

// Cursors are httpx.Cursors (docs/callbacks.md, "Paging"): the last row's
// sort values, signed with the data directory's cursor key for the scope
// below, so a cursor is opaque, unforgeable, survives daemon restarts and
// opens only for the resource, filters and sort it was issued for.

// cursorScope is what a cursor is bound to: the resource, its filters and
// its sort, as given.
func cursorScope(name string, req FilterRequest) string {
	data, _ := json.Marshal(struct {
		F []FieldFilter `json:"f"`
		S []SortOrder   `json:"s"`
	}{req.Filters, req.Sort})
	return httpx.CursorScope("callbacks-filter-v1", name, string(data))
}

func sealCursor(cursors *httpx.Cursors, scope string, vals []any) (string, error) {
	norm := make([]any, len(vals))
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		norm[i] = v
	}
	return cursors.Sign(scope, norm)
}

// errBadCursor answers a cursor that does not open: 400, as for other
// malformed input.
var errBadCursor = &Error{Code: EBadRequest, Message: "cursor is invalid or was issued for other filters or sort; start again without it"}

func openCursor(cursors *httpx.Cursors, cur, scope string, n int) ([]any, error) {
	var vals []any
	if err := cursors.Open(scope, cur, &vals); err != nil || len(vals) != n {
		return nil, errBadCursor
	}
	for i, v := range vals {
		if num, ok := v.(json.Number); ok {
			x, err := strconv.ParseInt(string(num), 10, 64)
			if err != nil {
				return nil, errBadCursor
			}
			vals[i] = x
		}
	}
	return vals, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
