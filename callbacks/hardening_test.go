package callbacks

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestStrictRequestParsing: bodies encoding/json would accept silently
// (duplicate keys, invalid UTF-8, lone surrogates) and two Authorization
// headers answer 400 problem+json and change nothing (issue 20, item 7).
func TestStrictRequestParsing(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	for _, body := range []string{
		`{"domain":"a.example.com","domain":"b.example.com"}`,
		`{"domain":"a.example.com","description":"x","descr\u0069ption":"y"}`,
		"{\"domain\":\"a.example.com\",\"description\":\"\xff\"}",
		`{"domain":"a.example.com","description":"\ud800"}`,
		`{"domain":"a.example.com","description":"\udc00x"}`,
	} {
		p := h.problem(400, "POST", pathDomains, body)
		is.Equal(p.Code, "CB-BAD-REQUEST")
	}
	// At any depth, on every kind of body.
	p := h.problem(400, "POST", pathDomains+"/filter", `{"filters":[{"field":"domain","operator":"eq","value":"x","value":"y"}]}`)
	is.Equal(p.Code, "CB-BAD-REQUEST")
	is.True(strings.Contains(p.Message, `duplicate key "value"`))
	var page PaginationResponse[AuthorizedDomain]
	h.must(200, "GET", pathDomains, nil, &page)
	is.Equal(page.TotalElements, int64(0)) // nothing was created

	req, err := http.NewRequest("POST", h.srv.URL+pathDomains, strings.NewReader(`{"domain":"a.example.com"}`))
	is.NoErr(err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("Authorization", "Bearer "+testToken)
	req.Header.Add("Authorization", "Bearer wrong")
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 400)
	is.Equal(resp.Header.Get("Content-Type"), "application/problem+json")
	is.True(strings.Contains(string(data), "CB-BAD-REQUEST"))
	h.must(200, "GET", pathDomains, nil, &page)
	is.Equal(page.TotalElements, int64(0))
	// A clean body still works.
	h.must(201, "POST", pathDomains, `{"domain":"a.example.com","description":"\ud83d\ude00"}`, nil)
}

// TestClientErrorsAreNotLoggedAsErrors: a run of bad requests writes no
// ERROR line; a server failure does (issue 20, item 16).
func TestClientErrorsAreNotLoggedAsErrors(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	var buf safeBuffer
	h := startHarness(&harness{t: t, dir: t.TempDir(), yaml: fastYAML,
		logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	d := h.authorize("example.com")
	bad := []struct {
		status       int
		method, path string
		body         any
	}{
		{400, "POST", pathDomains, `{"domain":`},
		{400, "POST", pathDomains, `{"domain":"x.example.com","nope":1}`},
		{400, "POST", pathDomains, `{"domain":1}`},
		{400, "POST", pathDomains, `{"domain":"x.example.com","domain":"y.example.com"}`},
		{422, "POST", pathDomains, `{"domain":"not a domain"}`},
		{409, "POST", pathDomains, `{"domain":"example.com"}`},
		{404, "GET", pathDomains + "/" + uuid.NewString(), nil},
		{404, "GET", pathDomains + "/not-a-uuid", nil},
		{400, "GET", pathDomains + "?size=x", nil},
		{400, "GET", pathDomains + "?bogus=1", nil},
		{400, "GET", pathDomains + "?cursor=forged.cursor", nil},
		{422, "GET", pathDomains + "?size=0", nil},
		{422, "POST", pathDomains + "/filter", `{"filters":[{"field":"nope","operator":"eq","value":1}]}`},
		{400, "POST", pathExecutions + "/filter", `{"cursor":"x.y"}`},
		{409, "POST", pathConfigs, `{"name":"n","url":"https://evil.test/x","subscribedEventTypes":["a"]}`},
		{422, "PUT", pathDomains + "/" + d.ID, `{"domain":""}`},
		{404, "POST", pathExecutions + "/retry", `{"executionId":"` + uuid.NewString() + `"}`},
		{422, "POST", pathExecutions + "/replay", `{"since":"yesterday"}`},
		{413, "POST", pathDomains, `{"description":"` + strings.Repeat("x", maxBodyBytes) + `"}`},
	}
	for _, b := range bad {
		h.problem(b.status, b.method, b.path, b.body)
	}
	// 401 and 415 need other headers.
	req, _ := http.NewRequest("GET", h.srv.URL+pathDomains, nil)
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 401)
	req, _ = http.NewRequest("POST", h.srv.URL+pathDomains, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "text/plain")
	resp, err = http.DefaultClient.Do(req)
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 415)
	if strings.Contains(buf.String(), "level=ERROR") {
		t.Fatalf("a client error was logged at ERROR:\n%s", buf.String())
	}
	is.True(strings.Contains(buf.String(), `level=DEBUG msg="callbacks: request refused" method=POST path=/api/v1/authorized-domains status=409`))

	// A failure of the service itself is.
	is.NoErr(h.db.Close())
	h.problem(500, "GET", pathDomains, nil)
	is.True(strings.Contains(buf.String(), "level=ERROR"))
}

// TestTypeErrorNamesTheElement: a wrong value inside an array is named by
// its own path in the diagnostics (issue 20, item 16).
func TestTypeErrorNamesTheElement(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	p := h.problem(400, "POST", pathConfigs, `{"name":"n","url":"https://a.example.com","subscribedEventTypes":["a",1]}`)
	is.Equal(len(p.Diagnostics), 1)
	is.Equal(p.Diagnostics[0].Field, "subscribedEventTypes[1]")
	p = h.problem(400, "POST", pathDomains+"/filter", `{"filters":[{"field":"domain","operator":"in","values":["a"]},{"field":"domain","operator":1}]}`)
	is.Equal(p.Diagnostics[0].Field, "filters[1].operator")
}

// TestUnknownFieldNamesItsPath: a nested unknown property is named by its
// path in the diagnostics.
func TestUnknownFieldNamesItsPath(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	p := h.problem(400, "POST", pathDomains+"/filter", `{"filters":[{"field":"domain","operator":"eq","value":"x","bogus":1}]}`)
	is.Equal(p.Diagnostics[0].Field, "filters[0].bogus")
}
