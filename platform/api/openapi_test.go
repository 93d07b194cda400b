package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/api"
)

func TestOpenAPIDocument(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	doc := e.a.OpenAPI(api.Info{Title: "t", Version: "1"})
	data, err := json.Marshal(doc)
	is.NoErr(err)
	is.Equal(doc["openapi"], "3.1.0")
	keys := api.OperationKeys(doc)
	for _, want := range []string{
		"POST /api/v1/tenants/{tenant}/things", "POST /tenants/{tenant}/things",
		"GET /api/v1/tenants/{tenant}/things", "HEAD /api/v1/tenants/{tenant}/things", "HEAD /tenants/{tenant}/things",
		"PUT /api/v1/tenants/{tenant}/things/{thing}", "GET /admin/things", "HEAD /admin/things",
	} {
		found := false
		for _, k := range keys {
			found = found || k == want
		}
		if !found {
			t.Errorf("missing %s in %v", want, keys)
		}
	}
	for _, k := range keys {
		is.True(!strings.HasPrefix(k, "GET /api/v1/admin")) // root routes have no twin
	}
	var d struct {
		Paths map[string]map[string]struct {
			OperationID string           `json:"operationId"`
			Deprecated  bool             `json:"deprecated"`
			Capability  string           `json:"x-capability"`
			Security    []map[string]any `json:"security"`
			Parameters  []struct {
				Name, In string
				Required bool
			} `json:"parameters"`
			RequestBody *struct{} `json:"requestBody"`
			Responses   map[string]struct {
				Content map[string]any `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Required             []string       `json:"required"`
				AdditionalProperties bool           `json:"additionalProperties"`
				Properties           map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	is.NoErr(json.Unmarshal(data, &d))
	post := d.Paths["/api/v1/tenants/{tenant}/things"]["post"]
	is.Equal(post.Capability, "definition.publish")
	is.True(!post.Deprecated)
	is.True(post.RequestBody != nil)
	is.True(post.Responses["201"].Content != nil)
	is.True(post.Responses["422"].Content["application/problem+json"] != nil)
	var idem bool
	for _, p := range post.Parameters {
		if p.Name == "Idempotency-Key" {
			idem = p.In == "header" && p.Required
		}
	}
	is.True(idem)
	is.True(d.Paths["/tenants/{tenant}/things"]["post"].Deprecated)
	is.True(d.Paths["/tenants/{tenant}/things"]["post"].OperationID != post.OperationID)
	is.Equal(len(d.Paths["/api/v1/boom"]["get"].Security), 0)
	is.Equal(len(d.Paths["/admin/things"]["get"].Security), 2)
	head := d.Paths["/api/v1/tenants/{tenant}/things"]["head"]
	is.True(head.Responses["200"].Content == nil)
	// Page schemas are named for their item and list the envelope.
	page := d.Components.Schemas["Pagething"]
	is.True(page.Properties["items"] != nil)
	is.True(page.Properties["next_cursor"] != nil)
	problem := d.Components.Schemas["Problem"]
	is.Equal(problem.Required, []string{"status", "code", "message", "request_id", "diagnostics"})
}
