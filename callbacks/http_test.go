package callbacks

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

type problem struct {
	Status      int          `json:"status"`
	Code        string       `json:"code"`
	Message     string       `json:"message"`
	RequestID   string       `json:"request_id"`
	Diagnostics []FieldError `json:"diagnostics"`
}

func (h *harness) problem(want int, method, path string, body any) problem {
	h.t.Helper()
	status, hdr, data := h.call(method, path, body, nil)
	if status != want {
		h.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, data)
	}
	if ct := hdr.Get("Content-Type"); ct != "application/problem+json" {
		h.t.Fatalf("%s %s: content type %q", method, path, ct)
	}
	var p problem
	if err := json.Unmarshal(data, &p); err != nil {
		h.t.Fatalf("problem body %s: %v", data, err)
	}
	if p.Status != want || p.RequestID == "" {
		h.t.Fatalf("problem %+v", p)
	}
	return p
}

// TestEveryProtectedRouteNeedsTheOwnerToken walks the route table.
func TestEveryProtectedRouteNeedsTheOwnerToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastYAML, nil)
	for _, rt := range h.svc.routes() {
		path := strings.Replace(rt.Path, "{id}", uuid.NewString(), 1)
		for _, tok := range []string{"", "Bearer wrong", "Basic " + testToken} {
			req, _ := http.NewRequest(rt.Method, h.srv.URL+path, strings.NewReader("{}"))
			if tok != "" {
				req.Header.Set("Authorization", tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := http.StatusUnauthorized
			if rt.Public {
				want = http.StatusOK
			}
			if resp.StatusCode != want {
				t.Errorf("%s %s with %q: %d, want %d", rt.Method, rt.Path, tok, resp.StatusCode, want)
			}
		}
	}
}

func TestDomainsAPI(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	var d AuthorizedDomain
	_, hdr, _ := h.call("POST", pathDomains, map[string]any{"domain": "Hooks.Example.COM.", "includeSubdomains": true, "description": "ci"}, &d)
	is.Equal(d.Domain, "hooks.example.com")
	is.True(d.IncludeSubdomains)
	is.Equal(hdr.Get("Location"), pathDomains+"/"+d.ID)

	p := h.problem(409, "POST", pathDomains, map[string]any{"domain": "hooks.example.com"})
	is.Equal(p.Code, "CB-CONFLICT")

	var got AuthorizedDomain
	h.must(200, "GET", pathDomains+"/"+d.ID, nil, &got)
	is.Equal(got, d)
	h.problem(404, "GET", pathDomains+"/"+uuid.NewString(), nil)
	h.problem(404, "GET", pathDomains+"/not-a-uuid", nil)

	h.must(200, "PUT", pathDomains+"/"+d.ID, map[string]any{"domain": "api.example.com"}, &got)
	is.Equal(got.Domain, "api.example.com")
	is.True(!got.IncludeSubdomains) // PUT replaces
	other := h.authorize("other.example.com")
	p = h.problem(409, "PUT", pathDomains+"/"+other.ID, map[string]any{"domain": "api.example.com"})
	is.Equal(p.Code, "CB-CONFLICT")
	h.problem(404, "PUT", pathDomains+"/"+uuid.NewString(), map[string]any{"domain": "x.example.com"})

	// Bounds and shapes.
	label63 := strings.Repeat("a", 63)
	long253 := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".")
	is.Equal(len(long253), 253)
	for _, c := range []struct {
		body any
		ok   bool
	}{
		{map[string]any{"domain": long253}, true},
		{map[string]any{"domain": long253 + "c"}, false},
		{map[string]any{"domain": label63 + ".com"}, true},
		{map[string]any{"domain": label63 + "a.com"}, false},
		{map[string]any{"domain": ""}, false},
		{map[string]any{"domain": "https://x.com"}, false},
		{map[string]any{"domain": "x.com:8080"}, false},
		{map[string]any{"domain": "-x.com"}, false},
		{map[string]any{"domain": "exa mple.com"}, false},
		{map[string]any{"domain": "ünicode.com"}, false},
		{map[string]any{"domain": "10.0.0.1"}, true},
		{map[string]any{"domain": "[::1]"}, true},
		{map[string]any{"domain": "10.0.0.2", "includeSubdomains": true}, false},
		{map[string]any{"domain": "d1.example.com", "description": strings.Repeat("é", 500)}, true},
		{map[string]any{"domain": "d2.example.com", "description": strings.Repeat("é", 501)}, false},
	} {
		status, _, data := h.call("POST", pathDomains, c.body, nil)
		if c.ok != (status == 201) || (!c.ok && status != 422) {
			t.Errorf("%v: status %d: %s", c.body, status, data)
		}
	}
	p = h.problem(422, "POST", pathDomains, map[string]any{"domain": "bad domain"})
	is.Equal(p.Code, "CB-VALIDATION")
	is.Equal(p.Diagnostics[0].Field, "domain")

	p = h.problem(400, "POST", pathDomains, `{"domain":"a.com","wildcard":true}`)
	is.Equal(p.Code, "CB-BAD-REQUEST")
	is.Equal(p.Diagnostics[0].Field, "wildcard")
	h.problem(400, "POST", pathDomains, `{"domain":`)
	h.problem(400, "POST", pathDomains, `{"domain":1}`)
	h.problem(400, "POST", pathDomains, ``)
	h.problem(413, "POST", pathDomains, `{"description":"`+strings.Repeat("x", maxBodyBytes)+`"}`)
	req, _ := http.NewRequest("POST", h.srv.URL+pathDomains, strings.NewReader("domain=a.com"))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 415)

	var page PaginationResponse[AuthorizedDomain]
	h.must(200, "GET", pathDomains+"?size=2", nil, &page)
	is.Equal(len(page.Content), 2)
	is.True(page.TotalElements >= 6)
	is.True(page.HasNext)
	h.problem(400, "GET", pathDomains+"?sise=2", nil)
	h.problem(400, "GET", pathDomains+"?size=two", nil)
	h.problem(422, "GET", pathDomains+"?size=0", nil)
	h.must(200, "POST", pathDomains+"/filter", FilterRequest{Filters: []FieldFilter{{Field: "domain", Operator: "startsWith", Value: json.RawMessage(`"api."`)}}}, &page)
	is.Equal(page.TotalElements, int64(1))

	h.must(204, "DELETE", pathDomains+"/"+d.ID, nil, nil)
	h.problem(404, "DELETE", pathDomains+"/"+d.ID, nil)
}

func TestConfigurationsAPI(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	base := map[string]any{"name": "n", "url": "https://hooks.example.com/in", "subscribedEventTypes": []string{"a"}}

	p := h.problem(409, "POST", pathConfigs, base)
	is.Equal(p.Code, "CB-DOMAIN-NOT-AUTHORIZED")
	h.authorize("example.com")
	p = h.problem(409, "POST", pathConfigs, base) // subdomains not included
	is.Equal(p.Code, "CB-DOMAIN-NOT-AUTHORIZED")
	h.must(201, "POST", pathDomains, map[string]any{"domain": "hooks.example.com"}, nil)

	in := with(base, "signatureEnabled", true, "secret", testSecret, "maxRetries", 2, "timeoutMs", 500)
	var c Configuration
	status, _, raw := h.call("POST", pathConfigs, in, &c)
	is.Equal(status, 201)
	is.True(!strings.Contains(string(raw), testSecret))
	is.True(c.SecretSet)
	is.Equal(*c.MaxRetries, 2)
	is.Equal(c.HTTPMethod, "POST")
	is.Equal(c.Status, StatusActive)
	is.Equal(c.SignatureScheme, SchemePlatform)
	is.Equal(c.Version, 1)

	p = h.problem(409, "POST", pathConfigs, in)
	is.Equal(p.Code, "CB-CONFLICT") // duplicate name

	// Reads never return the secret.
	for _, path := range []string{pathConfigs + "/" + c.ID, pathConfigs, pathConfigs + "?size=1"} {
		_, _, data := h.call("GET", path, nil, nil)
		is.True(!strings.Contains(string(data), testSecret))
		is.True(!strings.Contains(string(data), "sealed"))
	}
	_, _, data := h.call("POST", pathConfigs+"/filter", FilterRequest{}, nil)
	is.True(!strings.Contains(string(data), testSecret))

	// Update without a secret keeps it; with "" removes it.
	var u Configuration
	h.must(200, "PUT", pathConfigs+"/"+c.ID, with(base, "signatureEnabled", true), &u)
	is.True(u.SecretSet)
	is.Equal(u.Version, 2)
	is.True(u.MaxRetries == nil) // PUT replaces
	p = h.problem(422, "PUT", pathConfigs+"/"+c.ID, with(base, "signatureEnabled", true, "secret", ""))
	is.Equal(p.Diagnostics[0].Field, "secret")
	h.must(200, "PUT", pathConfigs+"/"+c.ID, with(base, "secret", ""), &u)
	is.True(!u.SecretSet)
	p = h.problem(409, "PUT", pathConfigs+"/"+c.ID, with(base, "url", "https://evil.test/x"))
	is.Equal(p.Code, "CB-DOMAIN-NOT-AUTHORIZED")
	h.problem(404, "PUT", pathConfigs+"/"+uuid.NewString(), base)
	p = h.problem(422, "PUT", pathConfigs+"/"+c.ID, with(base, "status", "DISABLED"))
	is.Equal(p.Diagnostics[0].Field, "status")

	h.problem(400, "POST", pathConfigs, `{"name":"x","url":"https://hooks.example.com","subscribedEventTypes":["a"],"password":"x"}`)
	h.problem(400, "POST", pathConfigs, `{"name":"x","url":"https://hooks.example.com","subscribedEventTypes":"a"}`)

	// Both sides of every bound.
	str := strings.Repeat
	cases := []struct {
		field string
		value any
		ok    bool
	}{
		{"name", str("n", 200), true}, {"name", str("n", 201), false}, {"name", "", false}, {"name", "   ", false}, {"name", "a\nb", false},
		{"url", "https://hooks.example.com/" + str("p", 2048-26), true}, {"url", "https://hooks.example.com/" + str("p", 2048-25), false},
		{"url", "http://hooks.example.com", true}, {"url", "ftp://hooks.example.com", false}, {"url", "hooks.example.com/x", false},
		{"url", "https://user:pw@hooks.example.com", false}, {"url", "https://hooks.example.com/#frag", false},
		{"url", "https://hooks.example.com:65535", true}, {"url", "https://hooks.example.com:65536", false}, {"url", "https://hooks.example.com:0", false},
		{"url", "https://hooks.example.com/a b", false}, {"url", "", false},
		{"httpMethod", "put", true}, {"httpMethod", "GET", false}, {"httpMethod", "DELETE", false},
		{"status", "INACTIVE", true}, {"status", "PAUSED", false},
		{"subscribedEventTypes", []string{}, false}, {"subscribedEventTypes", manyTypes(100), true}, {"subscribedEventTypes", manyTypes(101), false},
		{"subscribedEventTypes", []string{str("t", 200)}, true}, {"subscribedEventTypes", []string{str("t", 201)}, false},
		{"subscribedEventTypes", []string{"a b"}, false}, {"subscribedEventTypes", []string{"a*b"}, false}, {"subscribedEventTypes", []string{"orders.*"}, true},
		{"signatureScheme", "HMAC", false},
		{"signatureHeader", str("h", 100), true}, {"signatureHeader", str("h", 101), false}, {"signatureHeader", "Content-Type", false},
		{"maxRetries", -1, false}, {"maxRetries", 0, true}, {"maxRetries", 20, true}, {"maxRetries", 21, false},
		{"retryDelayMs", 0, false}, {"retryDelayMs", 1, true}, {"retryDelayMs", 3600000, true}, {"retryDelayMs", 3600001, false},
		{"timeoutMs", 9, false}, {"timeoutMs", 10, true}, {"timeoutMs", 600000, true}, {"timeoutMs", 600001, false},
		{"failureThreshold", 0, false}, {"failureThreshold", 1, true}, {"failureThreshold", 100, true}, {"failureThreshold", 101, false},
	}
	for i, tc := range cases {
		body := with(base, "name", fmt.Sprintf("bound-%d", i), tc.field, tc.value)
		status, _, data := h.call("POST", pathConfigs, body, nil)
		if (status == 201) != tc.ok || (!tc.ok && status != 422) {
			t.Errorf("%s=%v: status %d: %s", tc.field, abbreviate(tc.value), status, data)
		}
		if !tc.ok && !strings.Contains(string(data), `"field":"`+tc.field) {
			t.Errorf("%s: diagnostics do not name the field: %s", tc.field, data)
		}
	}
	secretCases := []struct {
		scheme, secret string
		ok             bool
	}{
		{SchemePlatform, str("s", 15), false}, {SchemePlatform, str("s", 16), true},
		{SchemePlatform, str("s", 512), true}, {SchemePlatform, str("s", 513), false},
		{SchemeStandardWebhooks, "whsec_" + b64(23), false}, {SchemeStandardWebhooks, "whsec_" + b64(24), true},
		{SchemeStandardWebhooks, "whsec_" + b64(64), true}, {SchemeStandardWebhooks, "whsec_" + b64(65), false},
		{SchemeStandardWebhooks, b64(32), false}, {SchemeStandardWebhooks, "whsec_not base64!", false},
	}
	for i, tc := range secretCases {
		body := with(base, "name", fmt.Sprintf("secret-%d", i), "signatureEnabled", true, "signatureScheme", tc.scheme, "secret", tc.secret)
		status, _, data := h.call("POST", pathConfigs, body, nil)
		if (status == 201) != tc.ok {
			t.Errorf("%s secret of %d chars: status %d: %s", tc.scheme, len(tc.secret), status, data)
		}
		is.True(!strings.Contains(string(data), tc.secret)) // not even in errors
	}
	h.problem(422, "POST", pathConfigs, with(base, "name", "nosecret", "signatureEnabled", true))

	var page PaginationResponse[Configuration]
	h.must(200, "POST", pathConfigs+"/filter", FilterRequest{Filters: []FieldFilter{
		{Field: "subscribedEventTypes", Operator: "contains", Value: json.RawMessage(`"orders.*"`)}}}, &page)
	is.Equal(page.TotalElements, int64(1))

	h.must(204, "DELETE", pathConfigs+"/"+c.ID, nil, nil)
	h.problem(404, "GET", pathConfigs+"/"+c.ID, nil)
	h.problem(404, "DELETE", pathConfigs+"/"+c.ID, nil)
}

func TestSubscriptionsAPI(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	var s EventSubscription
	h.must(201, "POST", pathSubscriptions, map[string]any{"name": "all"}, &s)
	is.Equal(s.MessagingSystemType, MessagingInternal)
	is.Equal(s.ConsumerGroupID, "callbacks-mgmt-consumer")
	is.Equal(s.TopicOrQueue, "")
	is.True(s.Active)
	is.Equal(s.EventTypePatterns, []string{})
	h.problem(409, "POST", pathSubscriptions, map[string]any{"name": "all"})

	str := strings.Repeat
	cases := []struct {
		field string
		value any
		ok    bool
	}{
		{"name", str("n", 200), true}, {"name", str("n", 201), false},
		{"messagingSystemType", "kafka", true}, {"messagingSystemType", "RABBITMQ", false},
		{"topicOrQueue", str("t", 249), true}, {"topicOrQueue", str("t", 250), false},
		{"topicOrQueue", "github.*", true}, {"topicOrQueue", "a*b", false}, {"topicOrQueue", "bad topic", false}, {"topicOrQueue", "..", false},
		{"consumerGroupId", str("g", 255), true}, {"consumerGroupId", str("g", 256), false}, {"consumerGroupId", "", false}, {"consumerGroupId", "a b", false},
		{"eventTypePatterns", manyTypes(100), true}, {"eventTypePatterns", manyTypes(101), false}, {"eventTypePatterns", []string{""}, false},
	}
	for i, tc := range cases {
		body := map[string]any{"name": fmt.Sprintf("s-%d", i), tc.field: tc.value}
		if tc.field == "name" {
			body["name"] = tc.value
		}
		status, _, data := h.call("POST", pathSubscriptions, body, nil)
		if (status == 201) != tc.ok || (!tc.ok && status != 422) {
			t.Errorf("%s=%v: status %d: %s", tc.field, abbreviate(tc.value), status, data)
		}
	}
	h.problem(400, "POST", pathSubscriptions, `{"name":"x","queue":"y"}`)

	var u EventSubscription
	h.must(200, "PUT", pathSubscriptions+"/"+s.ID, map[string]any{"name": "all", "active": false}, &u)
	is.True(!u.Active)
	is.Equal(u.CreatedAt, s.CreatedAt)
	h.problem(404, "PUT", pathSubscriptions+"/"+uuid.NewString(), map[string]any{"name": "x"})
	h.problem(422, "PUT", pathSubscriptions+"/"+s.ID, map[string]any{"name": ""})
	var page PaginationResponse[EventSubscription]
	h.must(200, "POST", pathSubscriptions+"/filter", FilterRequest{Filters: []FieldFilter{eqFilter("active", false)}}, &page)
	is.Equal(page.TotalElements, int64(1))
	h.must(204, "DELETE", pathSubscriptions+"/"+s.ID, nil, nil)
	h.problem(404, "GET", pathSubscriptions+"/"+s.ID, nil)
	h.problem(404, "DELETE", pathSubscriptions+"/"+s.ID, nil)
}

func TestExecutionsAPIErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastYAML, nil)
	h.problem(404, "GET", pathExecutions+"/"+uuid.NewString(), nil)
	h.problem(404, "GET", pathExecutions+"/x", nil)
	h.problem(400, "GET", pathExecutions+"?colour=red", nil)
	h.problem(400, "GET", pathExecutions+"?state=A&state=B", nil)
	h.must(200, "GET", pathExecutions+"?state=PENDING&configurationId="+uuid.NewString(), nil, nil)
	h.problem(422, "POST", pathExecutions+"/filter", FilterRequest{Filters: []FieldFilter{{Field: "secret", Operator: "eq", Value: json.RawMessage(`"x"`)}}})
	h.problem(422, "POST", pathExecutions+"/filter", FilterRequest{Filters: []FieldFilter{{Field: "attempt", Operator: "contains", Value: json.RawMessage(`1`)}}})
	h.problem(422, "POST", pathExecutions+"/filter", FilterRequest{Filters: []FieldFilter{{Field: "attempt", Operator: "gt", Value: json.RawMessage(`"one"`)}}})
	h.problem(422, "POST", pathExecutions+"/filter", FilterRequest{Filters: []FieldFilter{{Field: "createdAt", Operator: "gt", Value: json.RawMessage(`"yesterday"`)}}})
	h.problem(422, "POST", pathExecutions+"/filter", FilterRequest{Sort: []SortOrder{{Field: "request"}}})
	h.problem(422, "POST", pathExecutions+"/filter", FilterRequest{Sort: []SortOrder{{Field: "attempt", Direction: "UP"}}})
	h.problem(400, "POST", pathExecutions+"/filter", `{"filters":[],"limit":5}`)
	h.problem(400, "POST", pathExecutions+"/retry", `{}`+"x")
}

func with(base map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func manyTypes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("type.%d", i)
	}
	return out
}

func b64(n int) string {
	return strings.TrimSpace(fmt.Sprint(base64Std(make([]byte, n))))
}

func abbreviate(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
