package platform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/cli"
	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/identity"

	"github.com/agentbridge/bridge/platform/lang"
)

// Definitions the catalog tests publish.
const (
	lookupAction = `kind: action
id: acme/lookup
version: 1
sideEffect: read_only
input:
  type: object
  required: [customerId]
  properties:
    customerId: {type: string}
output:
  type: object
  properties:
    tier: {type: string}
connector: echo
`
	billingAction = `kind: action
id: acme/bill
version: 1
sideEffect: unsafe
input:
  type: object
  properties:
    amount: {type: number}
worker: billing
`
	feeTable = `kind: decisionTable
id: acme/fee
version: 1
title: Fee by tier
hitPolicy: FIRST
inputs:
  - {name: tier, type: string}
outputs:
  - {name: fee, type: number}
rules:
  - id: gold
    when: ['"gold"']
    then: [0]
  - id: other
    when: ["-"]
    then: [10]
`
	onboardWorkflow = `kind: workflow
id: acme/onboard
version: 1
input:
  type: object
  required: [customerId]
  properties:
    customerId: {type: string}
steps:
  - id: lookup
    action: acme/lookup@1
    with:
      customerId: =input.customerId
  - id: fee
    decision: acme/fee@1
    with:
      tier: =steps.lookup.output.tier
result:
  tier: =steps.lookup.output.tier
`
)

// pPath is P of the bootstrapped project.
func pPath(h *harness) string {
	return "/api/v1/tenants/" + h.ws.TenantID + "/projects/" + h.ws.ProjectID
}

func (h *harness) publish(tok, segment, src, key string) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if key != "" {
		hdr["Idempotency-Key"] = key
	}
	return h.do(req{method: "POST", path: pPath(h) + "/" + segment, token: tok, hdr: hdr,
		body: catalog.PublishRequest{Source: src, Format: "yaml"}})
}

func (h *harness) mustPublish(tok, segment, src, key string) catalog.Version {
	h.t.Helper()
	var v catalog.Version
	h.must(201, h.publish(tok, segment, src, key), &v)
	return v
}

func (h *harness) saveDraft(tok, id, src, ifMatch string) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if ifMatch != "" {
		hdr["If-Match"] = ifMatch
	}
	return h.do(req{method: "PUT", path: pPath(h) + "/drafts/" + id, token: tok, hdr: hdr, body: catalog.PublishRequest{Source: src}})
}

// seedDefinitions publishes one definition of each collection and saves a
// draft; it answers the id to read under each collection segment.
func seedDefinitions(h *harness) map[string]string {
	op := h.localToken()
	ids := map[string]string{}
	ids["actions"] = h.mustPublish(op, "actions", lookupAction, "seed-action").ID
	ids["decision-tables"] = h.mustPublish(op, "decision-tables", feeTable, "seed-table").ID
	ids["workflows"] = h.mustPublish(op, "workflows", onboardWorkflow, "seed-workflow").ID
	var d catalog.ConnectorDescriptor
	h.must(200, h.get(pPath(h)+"/connector-descriptors/echo", op), &d)
	ids["connectors"] = h.mustPublish(op, "connectors", d.Source, "seed-connector").ID
	draft := "0190a0b0-0000-7000-8000-000000000001"
	h.must(201, h.saveDraft(op, draft, onboardWorkflow, ""), nil)
	ids["drafts"] = draft
	return ids
}

func compileBody(src, filename string, lock json.RawMessage, strict bool) catalog.CompileRequest {
	return catalog.CompileRequest{Source: src, Format: "yaml", Filename: filename, Catalog: lock, Strict: strict}
}

// TestCatalogDoneWhen is the scenario: a user writes a workflow in
// YAML, sees precise diagnostics from `bridge workflow compile`, publishes
// it and its actions through the API, reads it back by id with an ETag
// and evaluates a decision table through both routes.
func TestCatalogDoneWhen(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	dir := t.TempDir()
	file := filepath.Join(dir, "onboard.yaml")
	lockFile := filepath.Join(dir, "catalog.lock.json")
	runCLI := func(args ...string) (int, string) {
		var out, errw bytes.Buffer
		code := cli.Execute(context.Background(), cli.Build{Version: "test"}, args, &out, &errw)
		return code, out.String()
	}

	// A typo: the CLI points at line 12, column 5.
	bad := strings.Replace(onboardWorkflow, "    with:\n      customerId", "    whith:\n      customerId", 1)
	is.NoErr(os.WriteFile(file, []byte(bad), 0o600))
	code, out := runCLI("workflow", "compile", file)
	is.Equal(code, cli.ExitError)
	is.True(strings.Contains(out, file+":12:5: error LANG-UNKNOWN-KEY")) // line and column of "whith"

	// The action and the decision table are published through the API.
	action := h.mustPublish(op, "actions", lookupAction, "k-action")
	table := h.mustPublish(op, "decision-tables", feeTable, "k-table")
	is.Equal(action.Kind, "action")
	is.Equal(table.DefinitionID, "acme/fee")

	// The fixed workflow compiles with the project's catalog lock: the CLI
	// output is byte for byte the API body and lang's encoding.
	is.NoErr(os.WriteFile(file, []byte(onboardWorkflow), 0o600))
	lockRes := h.get(pPath(h)+"/catalog", op)
	h.must(200, lockRes, nil)
	is.NoErr(os.WriteFile(lockFile, lockRes.body, 0o600))
	code, cliJSON := runCLI("workflow", "compile", file, "--catalog", lockFile, "--json")
	is.Equal(code, 0)
	apiRes := h.post(pPath(h)+"/compiler/compile", op, compileBody(onboardWorkflow, "onboard.yaml", json.RawMessage(lockRes.body), false))
	h.must(200, apiRes, nil)
	is.Equal(string(apiRes.body), cliJSON)
	lock, err := lang.ParseCatalogLock(lockRes.body)
	is.NoErr(err)
	want, err := lang.Compile([]byte(onboardWorkflow), lang.Options{Filename: "onboard.yaml", Catalog: lock}).Encode()
	is.NoErr(err)
	is.Equal(string(apiRes.body), string(want)+"\n")
	var res lang.Result
	apiRes.json(t, &res)
	is.True(res.OK)

	// Published, then read back by id with an ETag.
	wf := h.mustPublish(op, "workflows", onboardWorkflow, "k-workflow")
	is.Equal(wf.Digest, res.Digest) // the same artifact as the local compilation
	got := h.get(pPath(h)+"/workflows/"+wf.ID, op)
	var back catalog.Version
	h.must(200, got, &back)
	is.Equal(got.header.Get("ETag"), `"1"`)
	is.Equal(back.ID, wf.ID)
	is.Equal(back.Source, onboardWorkflow)
	is.Equal(back.Digest, wf.Digest)

	// The decision table through both routes, snake_case answers.
	var raw map[string]any
	h.must(200, h.post(pPath(h)+"/compiler/evaluate-decision", op, map[string]any{"reference": "acme/fee@1", "input": map[string]any{"tier": "gold"}}), &raw)
	is.Equal(raw, map[string]any{"output": 0.0, "matched_rule_ids": []any{"gold"}, "used_default": false})
	tableDoc := map[string]any{"hitPolicy": "FIRST", "inputs": []any{map[string]any{"name": "tier", "type": "string"}},
		"outputs": []any{map[string]any{"name": "fee", "type": "number"}},
		"rules":   []any{map[string]any{"id": "gold", "when": []any{`"gold"`}, "then": []any{0}}}, "default": map[string]any{"fee": 10}}
	h.must(200, h.post(catalog.StudioDecisionPath, op, map[string]any{"table": tableDoc, "input": map[string]any{"tier": "silver"}}), &raw)
	is.Equal(raw, map[string]any{"output": 10.0, "matched_rule_ids": []any{}, "used_default": true})
}

func TestPublishAndReadVersions(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	scope := identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID}
	_, viewer := h.user("vera", "viewer", scope)
	_, dev := h.user("dave", "developer", scope)

	// Authentication, authority, scope.
	h.problem(401, "PF-UNAUTHENTICATED", h.publish("", "actions", lookupAction, "k"))
	h.problem(403, "PF-FORBIDDEN", h.publish(viewer, "actions", lookupAction, "k"))
	other := "/api/v1/tenants/" + h.ws.TenantID + "/projects/00000000-0000-4000-8000-000000000000/actions"
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "POST", path: other, token: op, hdr: map[string]string{"Idempotency-Key": "k"},
		body: catalog.PublishRequest{Source: lookupAction}}))

	// Idempotency-Key: required, 1..200 characters.
	h.problem(422, "PF-IDEMPOTENCY", h.publish(op, "actions", lookupAction, ""))
	h.problem(422, "PF-IDEMPOTENCY", h.publish(op, "actions", lookupAction, strings.Repeat("k", 201)))
	key := strings.Repeat("k", 200)
	first := h.publish(dev, "actions", lookupAction, key)
	var v1 catalog.Version
	h.must(201, first, &v1)
	is.Equal(first.header.Get("ETag"), `"1"`)
	is.Equal(first.header.Get("Location"), pPath(h)+"/actions/"+v1.ID)
	is.Equal(v1.Version, 1)
	is.Equal(v1.DefinitionID, "acme/lookup")
	is.True(strings.HasPrefix(v1.Digest, "sha256:"))
	// A replay answers the committed result; another body under the key is 409.
	replay := h.publish(dev, "actions", lookupAction, key)
	is.Equal(replay.status, 201)
	is.Equal(replay.header.Get("Idempotent-Replayed"), "true")
	is.Equal(string(replay.body), string(first.body))
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", h.publish(dev, "actions", billingAction, key))

	// Published versions never change: the same version again is refused,
	// a new version gets a new id and the first one reads the same.
	h.problem(409, "PF-CONFLICT", h.publish(dev, "actions", lookupAction, "k-again"))
	v2src := strings.Replace(lookupAction, "version: 1", "version: 2", 1)
	v2 := h.mustPublish(dev, "actions", v2src, "k-v2")
	is.True(v2.ID != v1.ID)
	is.Equal(v2.Version, 2)
	var reread catalog.Version
	h.must(200, h.get(pPath(h)+"/actions/"+v1.ID, viewer), &reread)
	is.Equal(reread, v1)
	_, err := h.d.DB.Reader().Exec(`UPDATE platform_definition_versions SET source = 'x' WHERE id = ?`, v1.ID)
	is.True(err != nil) // the store refuses too

	// The kind must match the collection; the source must compile.
	p := h.problem(422, "PF-VALIDATION", h.publish(op, "workflows", lookupAction, "k-kind"))
	is.Equal(p.Diagnostics[0].Path, "/source")
	broken := h.publish(op, "workflows", strings.Replace(onboardWorkflow, "acme/lookup@1", "acme/missing@1", 1), "k-broken")
	p = h.problem(422, "PF-VALIDATION", broken)
	is.Equal(p.Diagnostics[0].Code, "LANG-REF-UNKNOWN")
	var withResult struct {
		Result lang.Result `json:"result"`
	}
	broken.json(t, &withResult)
	is.True(!withResult.Result.OK)
	is.True(len(withResult.Result.Diagnostics) > 0)
	h.problem(422, "PF-VALIDATION", h.do(req{method: "POST", path: pPath(h) + "/actions", token: op,
		hdr: map[string]string{"Idempotency-Key": "k-fmt"}, body: map[string]string{"source": lookupAction, "format": "json"}}))
	h.problem(422, "PF-VALIDATION", h.do(req{method: "POST", path: pPath(h) + "/actions", token: op,
		hdr: map[string]string{"Idempotency-Key": "k-extra"}, body: map[string]string{"source": lookupAction, "bogus": "x"}}))
	// Source size: 1 MiB is the limit.
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.publish(op, "actions", lookupAction+"#"+strings.Repeat("x", lang.MaxSourceBytes-len(lookupAction)), "k-big"))
	atLimit := lookupAction + "#" + strings.Repeat("x", lang.MaxSourceBytes-len(lookupAction)-1)
	atLimit = strings.Replace(atLimit, "version: 1", "version: 3", 1)
	is.Equal(len(atLimit), lang.MaxSourceBytes)
	h.must(201, h.publish(op, "actions", atLimit, "k-limit"), nil)

	// Reads: wrong collection, unknown and malformed ids are 404.
	h.problem(404, "PF-NOT-FOUND", h.get(pPath(h)+"/workflows/"+v1.ID, op))
	h.problem(404, "PF-NOT-FOUND", h.get(pPath(h)+"/actions/00000000-0000-4000-8000-000000000000", op))
	h.problem(404, "PF-NOT-FOUND", h.get(pPath(h)+"/actions/not-a-uuid", op))
	h.problem(401, "PF-UNAUTHENTICATED", h.get(pPath(h)+"/actions/"+v1.ID, ""))

	// Lists: limit 1..100, pages in id order, definition_id filter.
	var page struct {
		Items      []catalog.VersionSummary `json:"items"`
		NextCursor *string                  `json:"next_cursor"`
	}
	h.must(200, h.get(pPath(h)+"/actions?limit=100", viewer), &page)
	is.Equal(len(page.Items), 3)
	h.must(200, h.get(pPath(h)+"/actions?limit=1", viewer), &page)
	is.Equal(len(page.Items), 1)
	is.Equal(page.Items[0].ID, v1.ID)
	is.True(page.NextCursor != nil)
	h.must(200, h.get(pPath(h)+"/actions?limit=1&cursor="+*page.NextCursor, viewer), &page)
	is.Equal(page.Items[0].ID, v2.ID)
	h.problem(422, "PF-VALIDATION", h.get(pPath(h)+"/actions?limit=1&definition_id=acme/lookup&cursor="+*page.NextCursor, viewer))
	h.problem(422, "PF-VALIDATION", h.get(pPath(h)+"/actions?limit=0", viewer))
	h.problem(422, "PF-VALIDATION", h.get(pPath(h)+"/actions?limit=101", viewer))
	h.problem(422, "PF-VALIDATION", h.get(pPath(h)+"/actions?unknown=1", viewer))
	h.must(200, h.get(pPath(h)+"/actions?definition_id=acme/other", viewer), &page)
	is.Equal(len(page.Items), 0)
	h.must(200, h.get(pPath(h)+"/workflows", viewer), &page)
	is.Equal(len(page.Items), 0)
}

func TestDrafts(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	scope := identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID}
	_, viewer := h.user("vera", "viewer", scope)
	id := "0190a0b0-0000-7000-8000-0000000000d1"
	path := pPath(h) + "/drafts/" + id

	h.problem(401, "PF-UNAUTHENTICATED", h.saveDraft("", id, "kind: workflow", ""))
	h.problem(403, "PF-FORBIDDEN", h.saveDraft(viewer, id, "kind: workflow", ""))
	h.problem(404, "PF-NOT-FOUND", h.saveDraft(op, "not-a-uuid", "kind: workflow", ""))
	h.problem(412, "PF-ETAG", h.saveDraft(op, id, "kind: workflow", `"1"`)) // a new draft has no revision
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.saveDraft(op, id, strings.Repeat("#", lang.MaxSourceBytes+1), ""))

	// Create (any source, even an incomplete one), then save with If-Match.
	created := h.saveDraft(op, id, "kind: workflow\nid: acme/wip\n", "")
	var d catalog.Draft
	h.must(201, created, &d)
	is.Equal(created.header.Get("ETag"), `"1"`)
	is.Equal(*d.Kind, "workflow")
	is.Equal(d.Revision, int64(1))
	h.problem(422, "PF-ETAG", h.saveDraft(op, id, onboardWorkflow, ""))      // existing: If-Match required
	h.problem(422, "PF-ETAG", h.saveDraft(op, id, onboardWorkflow, `W/"1"`)) // malformed
	h.problem(412, "PF-ETAG", h.saveDraft(op, id, onboardWorkflow, `"7"`))   // stale
	saved := h.saveDraft(op, id, onboardWorkflow, "1")                       // bare revision accepted
	h.must(200, saved, &d)
	is.Equal(saved.header.Get("ETag"), `"2"`)

	got := h.get(path, viewer)
	h.must(200, got, &d)
	is.Equal(got.header.Get("ETag"), `"2"`)
	is.Equal(d.Source, onboardWorkflow)
	is.Equal(len(d.Revisions), 2)
	h.must(200, h.get(path+"?revision=1", viewer), &d)
	is.Equal(d.Source, "kind: workflow\nid: acme/wip\n")
	is.Equal(d.SourceRevision, int64(1))
	h.problem(422, "PF-VALIDATION", h.get(path+"?revision=3", viewer))
	h.problem(422, "PF-VALIDATION", h.get(path+"?revision=01", viewer))

	// Retire: Idempotency-Key and If-Match required, If-Match current; the
	// same key replays, a repeat is 409; the id is never reused; reads
	// keep every revision.
	del := func(ifMatch, key string) resp {
		hdr := map[string]string{}
		if ifMatch != "" {
			hdr["If-Match"] = ifMatch
		}
		if key != "" {
			hdr["Idempotency-Key"] = key
		}
		return h.do(req{method: "DELETE", path: path, token: op, hdr: hdr})
	}
	h.problem(403, "PF-FORBIDDEN", h.do(req{method: "DELETE", path: path, token: viewer, hdr: map[string]string{"If-Match": `"2"`, "Idempotency-Key": "r-0"}}))
	h.problem(422, "PF-IDEMPOTENCY", del(`"2"`, ""))
	h.problem(422, "PF-ETAG", del("", "r-1"))
	h.problem(412, "PF-ETAG", del(`"1"`, "r-1"))
	h.must(200, h.get(path, viewer), &d)
	is.True(!d.Retired) // refusals changed nothing
	retired := del(`"2"`, "r-1")
	h.must(200, retired, &d)
	is.Equal(retired.header.Get("ETag"), `"3"`)
	is.True(d.Retired)
	is.True(d.RetiredAt != nil)
	again := del(`"2"`, "r-1")
	is.Equal(again.status, 200)
	is.Equal(again.header.Get("Idempotent-Replayed"), "true")
	is.Equal(string(again.body), string(retired.body))
	h.problem(409, "PF-CONFLICT", del(`"3"`, "r-2"))
	h.problem(409, "PF-CONFLICT", h.saveDraft(op, id, onboardWorkflow, `"3"`))
	h.must(200, h.get(path, viewer), &d)
	is.Equal(d.Revision, int64(3))
	is.Equal(len(d.Revisions), 3)
	is.Equal(d.Revisions[2].Action, "retire")
	is.Equal(d.Source, onboardWorkflow)
	h.problem(404, "PF-NOT-FOUND", h.get(pPath(h)+"/drafts/0190a0b0-0000-7000-8000-0000000000ff", viewer))

	// Lists leave retired drafts out unless include_retired=true.
	live := "0190a0b0-0000-7000-8000-0000000000d2"
	h.must(201, h.saveDraft(op, live, "not: [valid yaml", ""), &d)
	is.True(d.Kind == nil)
	var page struct {
		Items []catalog.DraftSummary `json:"items"`
	}
	h.must(200, h.get(pPath(h)+"/drafts", viewer), &page)
	is.Equal(len(page.Items), 1)
	is.Equal(page.Items[0].ID, live)
	h.must(200, h.get(pPath(h)+"/drafts?include_retired=true", viewer), &page)
	is.Equal(len(page.Items), 2)
	is.True(page.Items[0].Retired)
	h.problem(422, "PF-VALIDATION", h.get(pPath(h)+"/drafts?include_retired=yes", viewer))
}

func TestCompilerRoutes(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	scope := identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID}
	_, viewer := h.user("vera", "viewer", scope)
	compile := pPath(h) + "/compiler/compile"
	validate := pPath(h) + "/compiler/validate"

	h.problem(401, "PF-UNAUTHENTICATED", h.post(compile, "", compileBody(onboardWorkflow, "", nil, false)))
	h.problem(403, "PF-FORBIDDEN", h.post(compile, viewer, compileBody(onboardWorkflow, "", nil, false)))
	h.problem(404, "PF-NOT-FOUND", h.post("/api/v1/tenants/"+h.ws.TenantID+"/projects/00000000-0000-4000-8000-000000000000/compiler/compile", op,
		compileBody(onboardWorkflow, "", nil, false)))

	// Without catalog, compile uses the project's lock: nothing published yet.
	var res lang.Result
	h.must(200, h.post(compile, op, compileBody(onboardWorkflow, "a.yaml", nil, false)), &res)
	is.True(!res.OK)
	is.Equal(res.Diagnostics[0].Code, "LANG-REF-UNKNOWN")
	is.Equal(res.Diagnostics[0].File, "a.yaml")
	h.mustPublish(op, "actions", lookupAction, "a")
	h.mustPublish(op, "decision-tables", feeTable, "t")
	direct := h.post(compile, op, compileBody(onboardWorkflow, "a.yaml", nil, false))
	h.must(200, direct, &res)
	is.True(res.OK) // the lock reflects the publications

	// The explicit lock gives the same bytes; lang gives them too.
	lockRes := h.get(pPath(h)+"/catalog", viewer)
	h.must(200, lockRes, nil)
	explicit := h.post(compile, op, compileBody(onboardWorkflow, "a.yaml", json.RawMessage(lockRes.body), false))
	is.Equal(string(explicit.body), string(direct.body))
	lock, err := lang.ParseCatalogLock(lockRes.body)
	is.NoErr(err)
	is.Equal(len(lock.Definitions), 2)
	want, _ := lang.Compile([]byte(onboardWorkflow), lang.Options{Filename: "a.yaml", Catalog: lock}).Encode()
	is.Equal(string(explicit.body), string(want)+"\n")
	h.problem(422, "PF-VALIDATION", h.post(compile, op, compileBody(onboardWorkflow, "", json.RawMessage(`{"definitions":[{"kind":"nope"}]}`), false)))

	// Validate: with a catalog, compile plus validationOk; without one,
	// partial validation where strict has no effect.
	var vr lang.ValidationResult
	h.must(200, h.post(validate, op, compileBody(onboardWorkflow, "a.yaml", json.RawMessage(lockRes.body), false)), &vr)
	is.True(vr.OK && vr.ValidationOK)
	is.Equal(vr.Digest, res.Digest)
	partial := h.post(validate, op, compileBody(onboardWorkflow, "a.yaml", nil, false))
	h.must(200, partial, &vr)
	is.True(vr.Partial && !vr.OK && vr.ValidationOK)
	strict := h.post(validate, op, compileBody(onboardWorkflow, "a.yaml", nil, true))
	is.Equal(string(strict.body), string(partial.body))
	wantV, _ := lang.Validate([]byte(onboardWorkflow), lang.Options{Filename: "a.yaml"}).Encode()
	is.Equal(string(partial.body), string(wantV)+"\n")

	// Body rules: size, format, unknown fields.
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.post(compile, op, compileBody(strings.Repeat("#", lang.MaxSourceBytes+1), "", nil, false)))
	h.must(200, h.post(validate, op, compileBody("#"+strings.Repeat("x", lang.MaxSourceBytes-1), "", nil, false)), nil)
	h.problem(422, "PF-VALIDATION", h.post(compile, op, map[string]any{"source": "x", "format": "json"}))
	h.problem(422, "PF-VALIDATION", h.post(compile, op, map[string]any{"source": "x", "extra": 1}))
	h.problem(422, "PF-VALIDATION", h.post(compile, op, map[string]any{}))
}

func TestCatalogLockCapabilitiesAndDescriptors(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	scope := identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID}
	_, viewer := h.user("vera", "viewer", scope)
	_, stranger := h.user("sam", "", scope)

	h.problem(403, "PF-FORBIDDEN", h.get(pPath(h)+"/catalog", stranger))
	h.problem(401, "PF-UNAUTHENTICATED", h.get(pPath(h)+"/catalog", ""))
	var lock lang.CatalogLock
	h.must(200, h.get(pPath(h)+"/catalog", viewer), &lock)
	is.Equal(len(lock.Definitions), 0)
	is.Equal(len(lock.Adapters), 2) // echo, noop
	is.Equal(len(lock.Tasks), 0)

	bill := h.mustPublish(op, "actions", billingAction, "b")
	h.must(200, h.get(pPath(h)+"/catalog", viewer), &lock)
	is.Equal(len(lock.Definitions), 1)
	is.Equal(lock.Definitions[0].PublishedVersionID, bill.ID)
	is.Equal(lock.Definitions[0].SideEffect, "unsafe")
	is.Equal(lock.Tasks, []lang.CatalogTask{{Queue: "billing"}})

	var caps catalog.Capabilities
	h.must(200, h.get(pPath(h)+"/capabilities", viewer), &caps)
	is.Equal(caps.Adapters, []string{"http", "echo", "noop"})
	is.True(len(caps.Language.StepKinds) == 13)
	is.Equal(caps.CallerCapabilities, []string{"catalog.read", "status.read", "run.read"})

	var ds []catalog.ConnectorDescriptor
	h.must(200, h.get(pPath(h)+"/connector-descriptors", viewer), &ds)
	is.Equal(len(ds), 3)
	is.Equal(ds[1].Adapter, "http")
	is.True(ds[1].BuiltIn)
	is.True(ds[1].PublishedVersionID == nil)
	// Publishing the exact manifest of a descriptor marks it published.
	v := h.mustPublish(op, "connectors", ds[1].Source, "c")
	var d catalog.ConnectorDescriptor
	h.must(200, h.get(pPath(h)+"/connector-descriptors/http", viewer), &d)
	is.Equal(*d.PublishedVersionID, v.ID)
	is.Equal(len(d.Published), 1)
	is.Equal(d.Actions[0].Name, "request")
	h.problem(404, "PF-NOT-FOUND", h.get(pPath(h)+"/connector-descriptors/smtp", viewer))
	h.problem(403, "PF-FORBIDDEN", h.get(pPath(h)+"/connector-descriptors", stranger))
	// An action bound through the published manifest compiles and publishes.
	bound := "kind: action\nid: acme/call\nsideEffect: unsafe\nconnector: builtin/http@1\noperation: request\n"
	h.mustPublish(op, "actions", bound, "bound")
}

func TestDecisionEvaluation(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	scope := identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID}
	_, viewer := h.user("vera", "viewer", scope)
	_, dev := h.user("dave", "developer", scope)
	eval := pPath(h) + "/compiler/evaluate-decision"
	table := map[string]any{"kind": "decisionTable", "version": 3, "title": "ignored", "hitPolicy": "UNIQUE",
		"inputs":  []any{map[string]any{"name": "weight", "type": "number"}},
		"outputs": []any{map[string]any{"name": "fee", "type": "number"}},
		"rules": []any{
			map[string]any{"id": "light", "when": []any{"< 10"}, "then": []any{5}},
			map[string]any{"id": "heavy", "when": []any{">= 10"}, "then": []any{20}},
		}}

	var out catalog.DecisionEvaluation
	res := h.post(eval, dev, map[string]any{"table": table, "input": map[string]any{"weight": 12.5}})
	h.must(200, res, &out)
	is.True(strings.Contains(string(res.body), `"matched_rule_ids":["heavy"]`))
	is.Equal(out.Output, 20.0)
	h.problem(403, "PF-FORBIDDEN", h.post(eval, viewer, map[string]any{"table": table, "input": map[string]any{}}))
	h.problem(401, "PF-UNAUTHENTICATED", h.post(eval, "", map[string]any{"table": table, "input": map[string]any{}}))
	h.problem(422, "PF-VALIDATION", h.post(eval, dev, map[string]any{"input": map[string]any{}}))
	h.problem(422, "PF-VALIDATION", h.post(eval, dev, map[string]any{"table": table, "reference": "acme/fee@1", "input": map[string]any{}}))
	h.problem(422, "PF-VALIDATION", h.post(eval, dev, map[string]any{"table": table, "input": []any{1}}))
	h.problem(404, "PF-NOT-FOUND", h.post(eval, dev, map[string]any{"reference": "acme/fee@1", "input": map[string]any{}}))
	h.problem(422, "PF-VALIDATION", h.post(eval, dev, map[string]any{"reference": "not a ref", "input": map[string]any{}}))
	bad := map[string]any{"inputs": table["inputs"], "outputs": table["outputs"],
		"rules": []any{map[string]any{"id": "r", "when": []any{"<<"}, "then": []any{1}}}}
	p := h.problem(422, "PF-VALIDATION", h.post(eval, dev, map[string]any{"table": bad, "input": map[string]any{}}))
	is.Equal(p.Diagnostics[0].Path, "/table/rules/0/when/0")
	p = h.problem(422, "PF-VALIDATION", h.post(eval, dev, map[string]any{"table": table, "input": map[string]any{"weight": "heavy"}}))
	is.Equal(p.Diagnostics[0].Code, "input_type")

	// By reference to a published table.
	h.mustPublish(op, "decision-tables", feeTable, "t")
	h.must(200, h.post(eval, dev, map[string]any{"reference": "acme/fee@1", "input": map[string]any{"tier": "gold"}}), &out)
	is.Equal(out.MatchedRuleIDs, []string{"gold"})

	// The editor host route: owner token or a token with compile somewhere.
	studio := catalog.StudioDecisionPath
	body := map[string]any{"table": table, "input": map[string]any{"weight": 1}}
	h.must(200, h.post(studio, h.owner, body), &out)
	is.Equal(out.Output, 5.0)
	h.must(200, h.post(studio, dev, body), &out)
	is.Equal(out.MatchedRuleIDs, []string{"light"})
	h.problem(401, "PF-UNAUTHENTICATED", h.post(studio, "", body))
	h.problem(403, "PF-FORBIDDEN", h.post(studio, viewer, body))
	h.problem(422, "PF-VALIDATION", h.post(studio, dev, map[string]any{"input": map[string]any{}}))
}
