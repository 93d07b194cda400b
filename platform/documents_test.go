package platform_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/platform/identity"
	"github.com/agentbridge/bridge/platform/platformtest"
	"github.com/agentbridge/bridge/platform/sim"
)

// sized is a document of exactly n bytes.
func sized(kind string, n int) json.RawMessage {
	field := "pad" // a canvas is free-form; test data has known fields only
	if kind == "test-data" {
		field = "updatedAt"
	}
	head := `{"schemaVersion":1,"kind":"` + kind + `","` + field + `":"`
	return json.RawMessage(head + strings.Repeat("x", n-len(head)-2) + `"}`)
}

func TestEditorDocuments(t *testing.T) {
	h := newHarness(t)
	op := h.localToken()
	h.mustPublish(op, "actions", platformtest.GreetAction, "g")
	h.mustPublish(op, "actions", platformtest.NothingAction, "n")
	draft := uuid.NewString()
	h.must(201, h.saveDraft(op, draft, platformtest.FlowWorkflow, ""), nil)
	P := pPath(h) + "/drafts/" + draft + "/studio/"
	put := func(tok, kind, ifMatch string, body any) resp {
		hdr := map[string]string{}
		if ifMatch != "" {
			hdr["If-Match"] = ifMatch
		}
		return h.do(req{method: "PUT", path: P + kind, token: tok, hdr: hdr, body: body})
	}
	td := func(input string) map[string]any {
		return map[string]any{"draft_revision": 1, "document": json.RawMessage(`{"schemaVersion":1,"kind":"test-data","updatedAt":"2026-01-01T00:00:00Z","input":` + input + `}`)}
	}
	var d sim.Document
	r := put(op, "test-data", "", td(`{"value":{"name":"Ada"},"source":"manual"}`))
	h.must(201, r, &d)
	if d.Revision != 1 || r.header.Get("ETag") != `"1"` || d.ContainsRunData || len(d.SourceEnvironmentIDs) != 0 || d.DraftRevision != 1 {
		t.Fatalf("%s", r.body)
	}
	h.must(200, h.get(P+"test-data", op), &d)
	h.problem(422, "PF-ETAG", put(op, "test-data", "", td(`{"value":{},"source":"manual"}`)))
	h.problem(412, "PF-ETAG", put(op, "test-data", `"7"`, td(`{"value":{},"source":"manual"}`)))
	h.problem(412, "PF-ETAG", put(op, "canvas", `"1"`, map[string]any{"draft_revision": 1, "document": sized("canvas", 100)}))
	// Derived fields are refused when a client sets them.
	body := td(`{"value":{},"source":"manual"}`)
	body["contains_run_data"] = false
	h.problem(422, "PF-VALIDATION", put(op, "test-data", `"1"`, body))
	body = td(`{"value":{},"source":"manual"}`)
	body["source_environment_ids"] = []string{}
	h.problem(422, "PF-VALIDATION", put(op, "test-data", `"1"`, body))
	// Run data: derived, sticky, and guarded by run.read.
	env := h.ws.EnvironmentID
	r = put(op, "test-data", `"1"`, td(`{"value":{"name":"Ada"},"source":"run","environmentId":"`+env+`"}`))
	h.must(200, r, &d)
	if d.Revision != 2 || !d.ContainsRunData || len(d.SourceEnvironmentIDs) != 1 || d.SourceEnvironmentIDs[0] != env {
		t.Fatalf("%s", r.body)
	}
	h.must(200, put(op, "test-data", `"2"`, td(`{"value":{"name":"Ada"},"source":"manual"}`)), &d)
	if !d.ContainsRunData || len(d.SourceEnvironmentIDs) != 1 {
		t.Fatalf("not sticky: %+v", d)
	}
	writer := h.link("human", "writer")
	h.grant(writer, identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID}, "", "catalog.read", "definition.write")
	wtok := h.ext.token(t, "writer", nil)
	h.problem(403, "PF-FORBIDDEN", h.get(P+"test-data", wtok))
	h.problem(403, "PF-FORBIDDEN", put(wtok, "test-data", `"3"`, td(`{"value":{},"source":"manual"}`)))
	h.problem(422, sim.CodeStudioReq, put(op, "test-data", `"3"`, td(`{"value":{},"source":"run"}`)))
	// Secrets, schema version, kind, draft revision.
	h.problem(422, sim.CodeSecretValue, put(op, "test-data", `"3"`, td(`{"value":{"name":"A","apiKey":"k"},"source":"manual"}`)))
	h.problem(422, sim.CodeDocTestData, put(op, "test-data", `"3"`, td(`{"value":{},"source":"guess"}`)))
	h.problem(422, sim.CodeStudioReq, put(op, "canvas", "", map[string]any{"draft_revision": 1, "document": json.RawMessage(`{"schemaVersion":2,"kind":"canvas"}`)}))
	h.problem(422, sim.CodeStudioReq, put(op, "canvas", "", map[string]any{"draft_revision": 1, "document": json.RawMessage(`{"schemaVersion":1,"kind":"test-data"}`)}))
	h.problem(422, sim.CodeStudioReq, put(op, "canvas", "", map[string]any{"draft_revision": 9, "document": sized("canvas", 100)}))
	// Size limits at and past the bound.
	h.must(201, put(op, "canvas", "", map[string]any{"draft_revision": 1, "document": sized("canvas", 256<<10)}), nil)
	h.problem(413, sim.CodeDocSize, put(op, "canvas", `"1"`, map[string]any{"draft_revision": 1, "document": sized("canvas", 256<<10+1)}))
	big := sized("test-data", 1<<20)
	h.must(200, put(op, "test-data", `"3"`, map[string]any{"draft_revision": 1, "document": big}), nil)
	h.problem(413, sim.CodeDocSize, put(op, "test-data", `"4"`, map[string]any{"draft_revision": 1, "document": sized("test-data", 1<<20+1)}))
	// Unknown kind, draft; a document not saved yet.
	h.problem(404, "PF-NOT-FOUND", h.get(pPath(h)+"/drafts/"+draft+"/studio/notes", op))
	h.problem(404, "PF-NOT-FOUND", h.get(pPath(h)+"/drafts/"+uuid.NewString()+"/studio/canvas", op))
	other := uuid.NewString()
	h.must(201, h.saveDraft(op, other, platformtest.FlowWorkflow, ""), nil)
	h.problem(404, "PF-NOT-FOUND", h.get(pPath(h)+"/drafts/"+other+"/studio/canvas", op))
}

// TestEditorDocumentSecretsWithDecisionTable: a draft whose workflow uses
// a published decision table still has its secret positions checked (the
// table's definition is loaded with the program).
func TestEditorDocumentSecretsWithDecisionTable(t *testing.T) {
	h := newHarness(t)
	op := h.localToken()
	h.mustPublish(op, "decision-tables", feeTable, "fee")
	draft := uuid.NewString()
	src := `kind: workflow
id: acme/fee-flow
version: 1
input:
  type: object
  properties:
    tier: {type: string}
    apiKey: {type: string, x-secret: true}
steps:
  - id: fee
    decision: acme/fee@1
    with:
      tier: =input.tier
`
	h.must(201, h.saveDraft(op, draft, src, ""), nil)
	put := func(input string) resp {
		return h.do(req{method: "PUT", path: pPath(h) + "/drafts/" + draft + "/studio/test-data", token: op,
			body: map[string]any{"draft_revision": 1, "document": json.RawMessage(`{"schemaVersion":1,"kind":"test-data","input":` + input + `}`)}})
	}
	p := h.problem(422, sim.CodeSecretValue, put(`{"value":{"tier":"gold","apiKey":"k"},"source":"manual"}`))
	if len(p.Diagnostics) != 1 || p.Diagnostics[0].Path != "/document/input/value" {
		t.Fatalf("%+v", p)
	}
	h.must(201, put(`{"value":{"tier":"gold"},"source":"manual"}`), nil)
}
