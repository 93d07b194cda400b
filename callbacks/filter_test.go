package callbacks

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/bridge/httpx"
)

// TestPagingWithPagesAndCursors pages 23 domains in every mode and checks
// that each item is seen exactly once, in order.
func TestPagingWithPagesAndCursors(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	var want []string
	for i := 0; i < 23; i++ {
		d := h.authorize(fmt.Sprintf("d%02d.example.com", i))
		want = append(want, d.Domain)
	}
	size := 5
	// Offset paging.
	var got []string
	for page := 0; ; page++ {
		p := page
		var res PaginationResponse[AuthorizedDomain]
		h.must(200, "POST", pathDomains+"/filter", FilterRequest{Page: &p, Size: &size}, &res)
		is.Equal(res.TotalElements, int64(23))
		is.Equal(res.TotalPages, int64(5))
		is.Equal(*res.Page, page)
		for _, d := range res.Content {
			got = append(got, d.Domain)
		}
		if !res.HasNext {
			is.Equal(res.NextCursor, "")
			break
		}
	}
	is.Equal(got, want)

	// Keyset paging, descending, with a filter.
	desc := []SortOrder{{Field: "domain", Direction: "DESC"}}
	filters := []FieldFilter{{Field: "domain", Operator: "contains", Value: json.RawMessage(`"example"`)}}
	got = nil
	cursor := ""
	for {
		var res PaginationResponse[AuthorizedDomain]
		h.must(200, "POST", pathDomains+"/filter", FilterRequest{Size: &size, Sort: desc, Filters: filters, Cursor: cursor}, &res)
		for _, d := range res.Content {
			got = append(got, d.Domain)
		}
		if cursor != "" {
			is.True(res.Page == nil)
		}
		if !res.HasNext {
			break
		}
		cursor = res.NextCursor
	}
	rev := slices.Clone(want)
	slices.Reverse(rev)
	is.Equal(got, rev)

	// A cursor is bound to its filters and sort, and cannot be forged.
	var first PaginationResponse[AuthorizedDomain]
	h.must(200, "POST", pathDomains+"/filter", FilterRequest{Size: &size, Sort: desc}, &first)
	p := h.problem(400, "POST", pathDomains+"/filter", FilterRequest{Size: &size, Cursor: first.NextCursor})
	is.True(strings.Contains(p.Message, "cursor"))
	h.problem(400, "POST", pathConfigs+"/filter", FilterRequest{Size: &size, Sort: []SortOrder{{Field: "name", Direction: "DESC"}}, Cursor: first.NextCursor})
	payload, mac, _ := strings.Cut(first.NextCursor, ".")
	h.problem(400, "POST", pathDomains+"/filter", FilterRequest{Sort: desc, Cursor: payload + "x." + mac})
	h.problem(400, "POST", pathDomains+"/filter", FilterRequest{Sort: desc, Cursor: "garbage"})
	zero := 0
	h.problem(422, "POST", pathDomains+"/filter", FilterRequest{Page: &zero, Cursor: first.NextCursor, Sort: desc})
	// GET collection uses the same cursors.
	var viaGet PaginationResponse[AuthorizedDomain]
	h.must(200, "GET", pathDomains+"?size=5", nil, &viaGet)
	h.must(200, "GET", pathDomains+"?size=5&cursor="+viaGet.NextCursor, nil, &viaGet)
	is.Equal(viaGet.Content[0].Domain, want[5])
}

func TestFilterBounds(t *testing.T) {
	t.Parallel()
	c := func(req FilterRequest) error {
		_, err := domainResource.compile(req, httpx.NewCursors([]byte("0123456789abcdef0123456789abcdef")))
		return err
	}
	n := func(v int) *int { return &v }
	var many []FieldFilter
	for i := 0; i < 21; i++ {
		many = append(many, eqFilter("domain", "x"))
	}
	var values []json.RawMessage
	for i := 0; i < 101; i++ {
		values = append(values, json.RawMessage(`"v"`))
	}
	cases := []struct {
		name string
		req  FilterRequest
		ok   bool
	}{
		{"empty", FilterRequest{}, true},
		{"size 0", FilterRequest{Size: n(0)}, false},
		{"size 1", FilterRequest{Size: n(1)}, true},
		{"size 500", FilterRequest{Size: n(500)}, true},
		{"size 501", FilterRequest{Size: n(501)}, false},
		{"page -1", FilterRequest{Page: n(-1)}, false},
		{"page 100000", FilterRequest{Page: n(100000)}, true},
		{"page 100001", FilterRequest{Page: n(100001)}, false},
		{"20 filters", FilterRequest{Filters: many[:20]}, true},
		{"21 filters", FilterRequest{Filters: many}, false},
		{"in 100", FilterRequest{Filters: []FieldFilter{{Field: "domain", Operator: "in", Values: values[:100]}}}, true},
		{"in 101", FilterRequest{Filters: []FieldFilter{{Field: "domain", Operator: "in", Values: values}}}, false},
		{"in without values", FilterRequest{Filters: []FieldFilter{{Field: "domain", Operator: "in", Value: json.RawMessage(`"x"`)}}}, false},
		{"eq with values", FilterRequest{Filters: []FieldFilter{{Field: "domain", Operator: "eq", Values: values[:1]}}}, false},
		{"eq without value", FilterRequest{Filters: []FieldFilter{{Field: "domain", Operator: "eq"}}}, false},
		{"long string", FilterRequest{Filters: []FieldFilter{eqFilter("domain", strings.Repeat("x", 1001))}}, false},
		{"bool field", FilterRequest{Filters: []FieldFilter{eqFilter("includeSubdomains", true)}}, true},
		{"bool as string", FilterRequest{Filters: []FieldFilter{eqFilter("includeSubdomains", "yes")}}, false},
		{"time", FilterRequest{Filters: []FieldFilter{{Field: "createdAt", Operator: "lt", Value: json.RawMessage(`"2030-01-01T00:00:00Z"`)}}}, true},
		{"3 sorts", FilterRequest{Sort: []SortOrder{{Field: "domain"}, {Field: "createdAt"}, {Field: "updatedAt"}}}, true},
		{"4 sorts", FilterRequest{Sort: []SortOrder{{Field: "domain"}, {Field: "createdAt"}, {Field: "updatedAt"}, {Field: "id"}}}, false},
		{"sort twice", FilterRequest{Sort: []SortOrder{{Field: "domain"}, {Field: "domain"}}}, false},
		{"unsortable", FilterRequest{Sort: []SortOrder{{Field: "description"}}}, false},
	}
	for _, tc := range cases {
		if err := c(tc.req); (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestFilterOperators checks each operator's SQL against real rows,
// including LIKE metacharacters taken literally.
func TestFilterOperators(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastYAML, nil)
	for _, d := range []string{"a-1.example.com", "b-2.example.com", "c-3.test"} {
		h.authorize(d)
	}
	h.must(201, "POST", pathDomains, map[string]any{"domain": "d.example.org", "description": "50% off_sale"}, nil)
	cases := []struct {
		f    FieldFilter
		want int64
	}{
		{eqFilter("domain", "a-1.example.com"), 1},
		{FieldFilter{Field: "domain", Operator: "ne", Value: json.RawMessage(`"a-1.example.com"`)}, 3},
		{FieldFilter{Field: "domain", Operator: "in", Values: []json.RawMessage{[]byte(`"a-1.example.com"`), []byte(`"c-3.test"`)}}, 2},
		{FieldFilter{Field: "domain", Operator: "notIn", Values: []json.RawMessage{[]byte(`"a-1.example.com"`)}}, 3},
		{FieldFilter{Field: "domain", Operator: "contains", Value: json.RawMessage(`"example"`)}, 3},
		{FieldFilter{Field: "domain", Operator: "startsWith", Value: json.RawMessage(`"b-"`)}, 1},
		{FieldFilter{Field: "description", Operator: "contains", Value: json.RawMessage(`"0% o"`)}, 1},
		{FieldFilter{Field: "description", Operator: "contains", Value: json.RawMessage(`"%"`)}, 1},
		{FieldFilter{Field: "domain", Operator: "contains", Value: json.RawMessage(`"_"`)}, 0},
		{FieldFilter{Field: "createdAt", Operator: "gte", Value: json.RawMessage(`"` + time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) + `"`)}, 4},
		{FieldFilter{Field: "createdAt", Operator: "lt", Value: json.RawMessage(`"2000-01-01T00:00:00Z"`)}, 0},
	}
	for _, tc := range cases {
		var res PaginationResponse[AuthorizedDomain]
		h.must(200, "POST", pathDomains+"/filter", FilterRequest{Filters: []FieldFilter{tc.f}}, &res)
		if res.TotalElements != tc.want {
			t.Errorf("%s %s %s: %d, want %d", tc.f.Field, tc.f.Operator, tc.f.Value, res.TotalElements, tc.want)
		}
	}
}

// TestCursorSurvivesRestart: a nextCursor issued before a daemon restart
// continues the same listing after it (issue 20, item 18); with other
// filters, or tampered, it answers 400 CB-BAD-REQUEST.
func TestCursorSurvivesRestart(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	for i := 0; i < 5; i++ {
		h.authorize(fmt.Sprintf("r%d.example.com", i))
	}
	size := 2
	filters := []FieldFilter{{Field: "domain", Operator: "startsWith", Value: json.RawMessage(`"r"`)}}
	var first PaginationResponse[AuthorizedDomain]
	h.must(200, "POST", pathDomains+"/filter", FilterRequest{Size: &size, Filters: filters}, &first)
	var viaGet PaginationResponse[AuthorizedDomain]
	h.must(200, "GET", pathDomains+"?size=2", nil, &viaGet)
	is.True(first.NextCursor != "" && viaGet.NextCursor != "")

	h.restart()

	var next PaginationResponse[AuthorizedDomain]
	h.must(200, "POST", pathDomains+"/filter", FilterRequest{Size: &size, Filters: filters, Cursor: first.NextCursor}, &next)
	is.Equal(len(next.Content), 2)
	is.Equal(next.Content[0].Domain, "r2.example.com")
	h.must(200, "GET", pathDomains+"?size=2&cursor="+viaGet.NextCursor, nil, &next)
	is.Equal(next.Content[0].Domain, "r2.example.com")

	other := []FieldFilter{{Field: "domain", Operator: "startsWith", Value: json.RawMessage(`"r1"`)}}
	p := h.problem(400, "POST", pathDomains+"/filter", FilterRequest{Size: &size, Filters: other, Cursor: first.NextCursor})
	is.Equal(p.Code, "CB-BAD-REQUEST")
	p = h.problem(400, "POST", pathDomains+"/filter", FilterRequest{Size: &size, Cursor: first.NextCursor})
	is.Equal(p.Code, "CB-BAD-REQUEST")
	p = h.problem(400, "GET", pathConfigs+"?size=2&cursor="+viaGet.NextCursor, nil)
	is.Equal(p.Code, "CB-BAD-REQUEST")
	p = h.problem(400, "POST", pathDomains+"/filter", FilterRequest{Size: &size, Filters: filters, Cursor: "e" + first.NextCursor})
	is.Equal(p.Code, "CB-BAD-REQUEST")
}
