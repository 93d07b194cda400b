package platform_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/compat"
	"github.com/agentbridge/bridge/platform/steptest"
)

// injectVersion stores a published version this server cannot run (as
// if published by another server), bypassing publication.
func (h *harness) injectVersion(kind, defID, artifact string) string {
	h.t.Helper()
	id := uuid.NewString()
	h.dbExec(`INSERT INTO platform_definition_versions(id, tenant_id, project_id, kind, definition_id, version, digest, artifact, source,
		catalog_digest, published_at, published_by) VALUES (?, ?, ?, ?, ?, 1, 'sha256:x', ?, '', 'sha256:x', 0, ?)`,
		id, h.ws.TenantID, h.ws.ProjectID, kind, defID, artifact, h.ws.OperatorID)
	return id
}

func TestCompatibility(t *testing.T) {
	is := is.New(t)
	clk := &fakeClock{t: clockStart()}
	h := newHarness(t, withClock(clk))
	op := h.localToken()
	act := setupFlow(h)
	path := pPath(h) + "/operations/compatibility"

	// The loop scans every project once at start (before the flow was
	// published here); a check scans now.
	var r compat.Report
	h.must(200, h.get(path, op), &r)
	is.Equal(r.Verdict, compat.Compatible)
	h.must(200, h.post(path+"/check", op, nil), &r)
	is.Equal(r.Verdict, compat.Compatible)
	is.Equal(r.Reason, nil)
	is.Equal(r.Checked, 3)
	is.Equal(len(r.Incompatible), 0)
	is.Equal(r.NextScanAt.Sub(r.CheckedAt), compat.DefaultInterval)
	is.Equal(r.Server.ExpressionLanguage, "cel")
	h.must(200, h.get("/health/ready", ""), nil)

	// Versions published by a server with other formats or adapters.
	bad := h.injectVersion("action", "acme/future", `{"format":"agentbridge.action/v9"}`)
	ftp := h.injectVersion("action", "acme/ftp", `{"format":"agentbridge.action/v1","binding":{"type":"adapter","adapter":"ftp"}}`)
	// Until a scan sees them, the verdict stands.
	h.must(200, h.get(path, op), &r)
	is.Equal(r.Verdict, compat.Compatible)
	h.must(200, h.post(path+"/check", op, nil), &r)
	is.Equal(r.Verdict, compat.Restricted)
	is.Equal(*r.Reason, compat.ReasonIncompatible)
	is.Equal(r.Checked, 5)
	is.Equal(len(r.Incompatible), 2)
	codes := map[string]string{}
	for _, f := range r.Incompatible {
		codes[f.PublishedVersionID] = f.Code
	}
	is.Equal(codes[bad], compat.FindingFormat)
	is.Equal(codes[ftp], compat.FindingAdapter)

	// Restricted: readiness 503, new work 503 with Retry-After to the
	// next rescan (whole seconds), nothing started.
	h.problem(503, "PF-UNAVAILABLE", h.get("/health/ready", ""))
	res := h.startRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "x"}}, "compat-1")
	h.problem(503, "PF-COMPATIBILITY", res)
	is.Equal(res.header.Get("Retry-After"), "300")
	clk.Set(clk.Now().Add(100*time.Second + 400*time.Millisecond))
	res = h.startRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "x"}}, "compat-1")
	is.Equal(res.header.Get("Retry-After"), "200")
	var page struct{ Items []any }
	h.must(200, h.get(ePath(h)+"/runs?include_test=true", op), &page)
	is.Equal(len(page.Items), 0)
	// Step tests start runs too.
	h.must(200, h.putPolicy(op, "all", ""), nil)
	draft := uuid.NewString()
	h.must(201, h.saveDraft(op, draft, "kind: workflow\nid: acme/c\nversion: 1\nsteps:\n  - id: pause\n    wait: 1h\n", ""), nil)
	h.problem(503, "PF-COMPATIBILITY", h.stepTest(op, stepBody(draft, "wait", "pause", nil)))

	// Who may read and check.
	_, viewer := h.user("compat-viewer", "viewer", h.envScope())
	h.problem(403, "PF-FORBIDDEN", h.post(path+"/check", viewer, nil))
	h.problem(404, "PF-NOT-FOUND", h.get("/api/v1/tenants/"+h.ws.TenantID+"/projects/"+uuid.NewString()+"/operations/compatibility", op))
	h.problem(422, "PF-VALIDATION", h.post(path+"/check", op, map[string]any{"x": 1}))

	// The operator removes them (another server's data); a check lifts
	// the verdict before the next rescan.
	h.dbExec(`DROP TRIGGER platform_definition_versions_no_delete`)
	h.dbExec(`DELETE FROM platform_definition_versions WHERE id IN (?, ?)`, bad, ftp)
	h.must(200, h.post(path+"/check", op, nil), &r)
	is.Equal(r.Verdict, compat.Compatible)
	h.must(200, h.get("/health/ready", ""), nil)
	h.must(201, h.startRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "x"}}, "compat-1"), nil)
	var st steptest.StepTestCreated
	h.must(200, h.stepTest(op, stepBody(draft, "wait", "pause", nil)), &st)

	// Automatic rescans, by the injected clock: the next one restricts
	// the project without anyone asking.
	h.injectVersion("connector", "acme/ftp-conn", `{"format":"agentbridge.connector/v1","adapter":"ftp"}`)
	h.must(200, h.get(path, op), &r)
	is.Equal(r.Verdict, compat.Compatible)
	clk.Set(r.NextScanAt)
	h.waitFor("the automatic rescan", func() bool {
		h.must(200, h.get(path, op), &r)
		return r.Verdict == compat.Restricted
	})
	is.Equal(r.Incompatible[0].Code, compat.FindingAdapter)
	// The verdict survives a restart.
	h.restart(true)
	op = h.localToken()
	h.problem(503, "PF-COMPATIBILITY", h.startRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "y"}}, "compat-2"))
}
