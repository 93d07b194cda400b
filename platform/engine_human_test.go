package platform_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/identity"
)

// reviewWorkflow opens a human task: review (assignees from the input, a
// form, two decisions, no deadline) or, with quick, a task with a short
// deadline that continues with late when it passes.
const reviewWorkflow = `kind: workflow
id: acme/review
version: 1
input:
  type: object
  required: [orderId]
  properties:
    orderId: {type: string}
    assignees: {type: array, items: {type: string}}
    quick: {type: boolean}
output:
  type: object
  properties:
    decision: {type: string}
    comment: {type: string}
    by: {type: string}
    late: {type: boolean}
steps:
  - id: route
    switch:
      - when: =has(input.quick) && input.quick
        next: quick
    default: review
  - id: review
    human:
      title: ="Review order " + input.orderId
      description: Check the address and the amount.
      assignees: '=has(input.assignees) ? input.assignees : []'
      form:
        type: object
        required: [comment]
        properties:
          comment: {type: string, maxLength: 50}
      decisions: [approve, reject]
  - id: done
    succeed:
      result:
        decision: =steps.review.output.decision
        comment: =steps.review.output.data.comment
        by: =steps.review.output.completedBy
  - id: quick
    human:
      title: Quick look
      assignees: group:finance
    deadline: 300ms
    onTimeout: late
  - id: quickDone
    succeed:
      result:
        decision: =steps.quick.output.decision
  - id: late
    succeed:
      result:
        late: true
`

type humanPage struct {
	Items      []engine.HumanTask `json:"items"`
	NextCursor *string            `json:"next_cursor"`
}

// setupReview publishes and activates the review workflow.
func (h *harness) setupReview(op string) string {
	h.t.Helper()
	wf := h.mustPublish(op, "workflows", reviewWorkflow, "review-workflow").ID
	return h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "review-activation", "").ID
}

// humanTaskOf starts a review run with input and answers the run and its
// open human task.
func (h *harness) humanTaskOf(tok, act, key string, input map[string]any) (engine.Run, engine.HumanTask) {
	h.t.Helper()
	run := h.mustStartRun(tok, map[string]any{"activation_id": act, "input": input}, key)
	h.waitRun(tok, run.ID, "waiting")
	var page humanPage
	h.must(200, h.get(ePath(h)+"/human-tasks?run_id="+run.ID, tok), &page)
	if len(page.Items) != 1 {
		h.t.Fatalf("run %s has %d human tasks, want 1", run.ID, len(page.Items))
	}
	return run, page.Items[0]
}

// humanDo posts verb for task id with an Idempotency-Key and an If-Match
// ("" leaves a header out).
func (h *harness) humanDo(tok, id, verb string, body any, key, ifMatch string) resp {
	h.t.Helper()
	hdr := map[string]string{"Idempotency-Key": key, "If-Match": ifMatch}
	for k, v := range hdr {
		if v == "" {
			delete(hdr, k)
		}
	}
	return h.do(req{method: "POST", path: ePath(h) + "/human-tasks/" + id + "/" + verb, token: tok, body: body, hdr: hdr})
}

// mustHuman posts verb and answers the task, asserting 200.
func (h *harness) mustHuman(tok, id, verb string, body any, key string) engine.HumanTask {
	h.t.Helper()
	var task engine.HumanTask
	h.must(200, h.humanDo(tok, id, verb, body, key, ""), &task)
	return task
}

func (h *harness) humanTask(tok, id string) engine.HumanTask {
	h.t.Helper()
	var task engine.HumanTask
	h.must(200, h.get(ePath(h)+"/human-tasks/"+id, tok), &task)
	return task
}

// waitHuman polls a task until it has status (10 s at most).
func (h *harness) waitHuman(tok, id, status string) engine.HumanTask {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		task := h.humanTask(tok, id)
		if task.Status == status {
			return task
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("human task %s is %s, want %s", id, task.Status, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *harness) principalID(tok string) string {
	h.t.Helper()
	var id identity.Identity
	h.must(200, h.get("/api/v1/identity", tok), &id)
	return id.PrincipalID
}

func (h *harness) envScope() identity.Scope {
	return identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID}
}

// reviewers is a harness with the review workflow activated and two
// operators of the environment, olga and pete.
type reviewers struct {
	*harness
	op, act                    string
	olgaID, olga, peteID, pete string
}

func newReviewers(t *testing.T) reviewers {
	r := reviewers{harness: newHarness(t)}
	r.op = r.localToken()
	r.olgaID, r.olga = r.user("olga", "operator", r.envScope())
	r.peteID, r.pete = r.user("pete", "operator", r.envScope())
	r.act = r.setupReview(r.op)
	return r
}

// reviewRun starts a harness with the review workflow activated and one
// run of it waiting on its human task.
func reviewRun(t *testing.T, key string, input map[string]any) (*harness, string, engine.Run, engine.HumanTask) {
	h := newHarness(t)
	op := h.localToken()
	run, task := h.humanTaskOf(op, h.setupReview(op), key, input)
	return h, op, run, task
}

func humanIDs(p humanPage) []string {
	out := make([]string, len(p.Items))
	for i, t := range p.Items {
		out[i] = t.ID
	}
	return out
}

func TestHumanTaskLifecycle(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	r := newReviewers(t)
	h, op, act, olgaID, olga, peteID, pete := r.harness, r.op, r.act, r.olgaID, r.olga, r.peteID, r.pete
	E := ePath(h)

	run, task := h.humanTaskOf(op, act, "hl-start", map[string]any{"orderId": "o-1", "assignees": []string{"group:finance", "user:" + olgaID}})
	is.Equal(task.RunID, run.ID)
	is.Equal(task.NodeID, "review")
	is.Equal(task.Title, "Review order o-1")
	is.Equal(task.Description, "Check the address and the amount.")
	is.Equal(task.Assignees, []string{"group:finance", "user:" + olgaID})
	is.Equal(task.Decisions, []string{"approve", "reject"})
	is.True(strings.Contains(string(task.Form), `"required":["comment"]`))
	is.Equal(task.Status, "open")
	is.Equal(task.Revision, int64(1))
	is.Equal(task.ClaimedBy, "")
	is.True(task.Deadline == nil)
	is.True(!task.OpenedAt.IsZero())
	got := h.get(E+"/human-tasks/"+task.ID, op)
	is.Equal(got.header.Get("ETag"), `"1"`)
	var read engine.HumanTask
	got.json(t, &read)
	is.Equal(read, task)

	// Filters.
	for q, want := range map[string]int{
		"": 1, "?status=open": 1, "?status=claimed": 0, "?status=completed": 0, "?status=closed": 0,
		"?run_id=" + run.ID: 1, "?run_id=0190a0b0-0000-7000-8000-00000000dead": 0,
		"?assignee=" + olgaID: 1, "?assignee=user:" + olgaID: 1, "?assignee=group:finance": 1, "?assignee=" + peteID: 0,
		"?claimed_by=" + peteID: 0,
	} {
		var page humanPage
		h.must(200, h.get(E+"/human-tasks"+q, op), &page)
		if len(page.Items) != want {
			t.Fatalf("%s: %d tasks, want %d", q, len(page.Items), want)
		}
	}

	// Claim (pete is no assignee; claiming is open to anyone with human_task.complete).
	claim := h.humanDo(pete, task.ID, "claim", nil, "c-1", "")
	var claimed engine.HumanTask
	h.must(200, claim, &claimed)
	is.Equal(claim.header.Get("ETag"), `"2"`)
	is.Equal(claimed.Status, "claimed")
	is.Equal(claimed.ClaimedBy, peteID)
	is.True(claimed.ClaimedAt != nil)
	is.Equal(claimed.Revision, int64(2))
	replay := h.humanDo(pete, task.ID, "claim", nil, "c-1", "")
	is.Equal(replay.status, 200)
	is.Equal(replay.header.Get("Idempotent-Replayed"), "true")
	is.Equal(string(replay.body), string(claim.body))
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", h.humanDo(pete, task.ID, "claim", map[string]any{}, "c-1", ""))
	// Claimed by someone else; claiming one's own task changes nothing.
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(olga, task.ID, "claim", nil, "c-2", ""))
	is.Equal(h.mustHuman(pete, task.ID, "claim", map[string]any{}, "c-3").Revision, int64(2))
	var page humanPage
	h.must(200, h.get(E+"/human-tasks?status=claimed&claimed_by="+peteID, op), &page)
	is.Equal(humanIDs(page), []string{task.ID})

	// Release: only by the holder, only a claimed task.
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(olga, task.ID, "release", nil, "r-1", ""))
	released := h.mustHuman(pete, task.ID, "release", nil, "r-2")
	is.Equal(released.Status, "open")
	is.Equal(released.ClaimedBy, "")
	is.True(released.ClaimedAt == nil)
	is.Equal(released.Revision, int64(3))
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(pete, task.ID, "release", nil, "r-3", ""))

	// If-Match: a stale revision is refused, the current one accepted.
	stale := h.problem(409, "PF-HUMAN-TASK-REVISION", h.humanDo(olga, task.ID, "claim", nil, "c-4", `"2"`))
	is.True(strings.Contains(stale.Message, "revision 3"))
	h.problem(422, "PF-ETAG", h.humanDo(olga, task.ID, "claim", nil, "c-5", `W/"3"`))
	var again engine.HumanTask
	h.must(200, h.humanDo(olga, task.ID, "claim", nil, "c-6", "3"), &again)
	is.Equal(again.ClaimedBy, olgaID)
	is.Equal(again.Revision, int64(4))

	// Completion by someone other than the holder.
	data := map[string]any{"comment": "looks fine"}
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(pete, task.ID, "complete", map[string]any{"decision": "approve", "data": data}, "x-1", ""))

	// Reassign (by anyone with human_task.complete) to a principal who may complete.
	_, vera := h.user("vera", "viewer", h.envScope())
	veraID := h.principalID(vera)
	for name, body := range map[string]any{
		"viewer":        map[string]any{"assignee": veraID},
		"unknown":       map[string]any{"assignee": "0190a0b0-0000-7000-8000-00000000dead"},
		"not a uuid":    map[string]any{"assignee": "pete"},
		"blank":         map[string]any{"assignee": ""},
		"missing":       map[string]any{},
		"unknown field": map[string]any{"assignee": peteID, "reason": "x"},
	} {
		t.Run("reassign "+name, func(t *testing.T) {
			checkProblem(t, 422, "PF-VALIDATION", h.humanDo(op, task.ID, "reassign", body, "ra-"+name, ""))
		})
	}
	h.problem(422, "PF-IDEMPOTENCY", h.humanDo(op, task.ID, "reassign", map[string]any{"assignee": peteID}, "", ""))
	reassigned := h.mustHuman(op, task.ID, "reassign", map[string]any{"assignee": peteID}, "ra-1")
	is.Equal(reassigned.ClaimedBy, peteID)
	is.Equal(reassigned.Revision, int64(5))
	is.Equal(h.mustHuman(op, task.ID, "reassign", map[string]any{"assignee": peteID}, "ra-2").Revision, int64(5))

	// Completion validation (the kernel checks the decision and the form).
	for name, body := range map[string]any{
		"bad decision":   map[string]any{"decision": "maybe", "data": data},
		"blank decision": map[string]any{"decision": "  ", "data": data},
		"long decision":  map[string]any{"decision": strings.Repeat("d", 201), "data": data},
		"no decision":    map[string]any{"data": data},
		"no data":        map[string]any{"decision": "approve"},
		"data missing":   map[string]any{"decision": "approve", "data": map[string]any{}},
		"data type":      map[string]any{"decision": "approve", "data": map[string]any{"comment": 5}},
		"data too long":  map[string]any{"decision": "approve", "data": map[string]any{"comment": strings.Repeat("c", 51)}},
		"unknown field":  map[string]any{"decision": "approve", "data": data, "note": "x"},
		"number":         map[string]any{"decision": 1, "data": data},
	} {
		t.Run("complete "+name, func(t *testing.T) {
			checkProblem(t, 422, "PF-VALIDATION", h.humanDo(pete, task.ID, "complete", body, "cv-"+name, ""))
		})
	}
	h.problem(422, "PF-IDEMPOTENCY", h.humanDo(pete, task.ID, "complete", map[string]any{"decision": "approve", "data": data}, "", ""))
	is.Equal(h.humanTask(op, task.ID).Revision, int64(5)) // refusals change nothing

	// Complete: the run continues and succeeds with the decision.
	body := map[string]any{"decision": "approve", "data": data}
	done := h.humanDo(pete, task.ID, "complete", body, "done-1", `"5"`)
	var completed engine.HumanTask
	h.must(200, done, &completed)
	is.Equal(done.header.Get("ETag"), `"6"`)
	is.Equal(completed.Status, "completed")
	is.Equal(completed.CompletedBy, peteID)
	is.Equal(completed.Decision, "approve")
	is.Equal(string(completed.Data), `{"comment":"looks fine"}`)
	is.True(completed.ClosedAt != nil)
	finished := h.waitRun(op, run.ID, "succeeded")
	is.Equal(string(finished.State.Output), `{"by":"`+peteID+`","comment":"looks fine","decision":"approve"}`)
	kinds := historyKinds(h.runHistory(op, run.ID))
	is.Equal(kinds[len(kinds)-1], "human_completed")

	// Replays answer the committed result; another body with the key conflicts.
	rep := h.humanDo(pete, task.ID, "complete", body, "done-1", `"5"`)
	is.Equal(rep.status, 200)
	is.Equal(rep.header.Get("Idempotent-Replayed"), "true")
	is.Equal(string(rep.body), string(done.body))
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", h.humanDo(pete, task.ID, "complete", map[string]any{"decision": "reject", "data": data}, "done-1", ""))

	// A completed task accepts no change.
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(pete, task.ID, "complete", map[string]any{"decision": "reject", "data": data}, "done-2", ""))
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(pete, task.ID, "claim", nil, "late-c", ""))
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(pete, task.ID, "release", nil, "late-r", ""))
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(op, task.ID, "reassign", map[string]any{"assignee": olgaID}, "late-ra", ""))
	h.must(200, h.get(E+"/human-tasks?status=completed", op), &page)
	is.Equal(humanIDs(page), []string{task.ID})
	h.must(200, h.get(E+"/human-tasks?status=open", op), &page)
	is.Equal(len(page.Items), 0)
}

func TestHumanTaskAssignees(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	r := newReviewers(t)
	h, op, act, olgaID, olga, peteID, pete := r.harness, r.op, r.act, r.olgaID, r.olga, r.peteID, r.pete
	body := map[string]any{"decision": "reject", "data": map[string]any{"comment": "no"}}

	// An open task with assignees: a listed one completes it directly
	// (user:<id> or the bare id), anyone else claims it first.
	_, task := h.humanTaskOf(op, act, "as-1", map[string]any{"orderId": "o-1", "assignees": []string{"user:" + olgaID}})
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(pete, task.ID, "complete", body, "as-c1", ""))
	done := h.mustHuman(olga, task.ID, "complete", body, "as-c2")
	is.Equal(done.CompletedBy, olgaID)
	is.Equal(done.ClaimedBy, "")

	run2, task2 := h.humanTaskOf(op, act, "as-2", map[string]any{"orderId": "o-2", "assignees": []string{peteID, "Pete Smith"}})
	is.Equal(h.mustHuman(pete, task2.ID, "complete", body, "as-c3").Status, "completed")
	out := h.waitRun(op, run2.ID, "succeeded")
	is.Equal(string(out.State.Output), `{"by":"`+peteID+`","comment":"no","decision":"reject"}`)

	// Display names match nobody; the task is claimed, then completed.
	_, task3 := h.humanTaskOf(op, act, "as-3", map[string]any{"orderId": "o-3", "assignees": []string{"olga"}})
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(olga, task3.ID, "complete", body, "as-c4", ""))
	h.mustHuman(olga, task3.ID, "claim", nil, "as-claim")
	is.Equal(h.mustHuman(olga, task3.ID, "complete", body, "as-c5").Status, "completed")

	// No assignees: anyone with human_task.complete.
	_, task4 := h.humanTaskOf(op, act, "as-4", map[string]any{"orderId": "o-4"})
	is.Equal(task4.Assignees, []string{})
	is.Equal(h.mustHuman(pete, task4.ID, "complete", body, "as-c6").CompletedBy, peteID)

	// Pages of one in id order; the cursor is bound to the filters.
	var ids []string
	path := ePath(h) + "/human-tasks?status=completed&limit=1"
	var cursor string
	for {
		var page humanPage
		h.must(200, h.get(path, op), &page)
		ids = append(ids, humanIDs(page)...)
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
		path = ePath(h) + "/human-tasks?status=completed&limit=1&cursor=" + cursor
	}
	is.Equal(len(ids), 4)
	for i := 1; i < len(ids); i++ {
		is.True(ids[i-1] < ids[i])
	}
	h.problem(422, "PF-VALIDATION", h.get(ePath(h)+"/human-tasks?limit=1&cursor="+cursor, op))
	h.problem(422, "PF-VALIDATION", h.get(ePath(h)+"/human-tasks?status=completed&assignee=x&limit=1&cursor="+cursor, op))
}

func TestHumanTaskAccess(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, op, run, task := reviewRun(t, "acc-1", map[string]any{"orderId": "o-1"})
	E := ePath(h)
	key := map[string]string{"Idempotency-Key": "k"}
	complete := map[string]any{"decision": "approve", "data": map[string]any{"comment": "ok"}}
	routes := []req{
		{method: "GET", path: E + "/human-tasks"},
		{method: "GET", path: E + "/human-tasks/" + task.ID},
		{method: "POST", path: E + "/human-tasks/" + task.ID + "/claim", hdr: key},
		{method: "POST", path: E + "/human-tasks/" + task.ID + "/release", hdr: key},
		{method: "POST", path: E + "/human-tasks/" + task.ID + "/reassign", hdr: key, body: map[string]any{"assignee": run.CreatedBy}},
		{method: "POST", path: E + "/human-tasks/" + task.ID + "/complete", hdr: key, body: complete},
	}
	for _, r := range routes {
		h.problem(401, "PF-UNAUTHENTICATED", h.do(r))
	}
	// A viewer holds neither capability; a reader only human_task.read.
	_, viewer := h.user("vera", "viewer", h.envScope())
	for _, r := range routes {
		r.token = viewer
		h.problem(403, "PF-FORBIDDEN", h.do(r))
	}
	readerID, reader := h.user("rita", "", h.envScope())
	h.grant(readerID, h.envScope(), "", "human_task.read")
	h.must(200, h.do(req{method: "GET", path: routes[0].path, token: reader}), nil)
	h.must(200, h.do(req{method: "GET", path: routes[1].path, token: reader}), nil)
	for _, r := range routes[2:] {
		r.token = reader
		h.problem(403, "PF-FORBIDDEN", h.do(r))
	}

	// Unknown tasks, malformed ids, other environments.
	missing := "0190a0b0-0000-7000-8000-00000000dead"
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/human-tasks/"+missing, op))
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/human-tasks/nope", op))
	for _, verb := range []string{"claim", "release"} {
		h.problem(404, "PF-NOT-FOUND", h.humanDo(op, missing, verb, nil, "nf-"+verb, ""))
	}
	h.problem(404, "PF-NOT-FOUND", h.humanDo(op, missing, "reassign", map[string]any{"assignee": run.CreatedBy}, "nf-ra", ""))
	h.problem(404, "PF-NOT-FOUND", h.humanDo(op, missing, "complete", complete, "nf-c", ""))
	h.problem(404, "PF-NOT-FOUND", h.humanDo(op, "nope", "claim", nil, "nf-x", ""))
	other := h.envPath(h.ws.TenantID, h.ws.ProjectID, h.environment(h.ws.ProjectID, "staging").ID)
	h.problem(404, "PF-NOT-FOUND", h.get(other+"/human-tasks/"+task.ID, op))
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "POST", path: other + "/human-tasks/" + task.ID + "/claim", token: op, hdr: key}))
	var page humanPage
	h.must(200, h.get(other+"/human-tasks", op), &page)
	is.Equal(len(page.Items), 0)

	// Claim and release take no body but {}.
	h.problem(422, "PF-VALIDATION", h.humanDo(op, task.ID, "claim", map[string]any{"why": "x"}, "b-1", ""))
	h.problem(422, "PF-VALIDATION", h.humanDo(op, task.ID, "release", []byte("[1]"), "b-2", ""))

	// List parameters.
	for _, q := range []string{"status=active", "run_id=nope", "claimed_by=olga", "assignee=" + strings.Repeat("a", 201),
		"limit=0", "limit=101", "cursor=forged", "status=open&status=claimed", "unknown=1"} {
		t.Run(q, func(t *testing.T) {
			checkProblem(t, 422, "PF-VALIDATION", h.get(E+"/human-tasks?"+q, op))
		})
	}
	is.Equal(h.humanTask(op, task.ID).Revision, int64(1)) // nothing above changed it
}

func TestHumanTaskDeadlineClosesIt(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := h.setupReview(op)
	// The task may already be closed when it is first read: no assertion
	// depends on reaching it within its 300 ms.
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"orderId": "o-1", "quick": true}}, "dl-1")
	var page humanPage
	h.must(200, h.get(ePath(h)+"/human-tasks?run_id="+run.ID, op), &page)
	is.Equal(len(page.Items), 1)
	task := page.Items[0]
	is.Equal(task.NodeID, "quick")
	is.True(task.Deadline != nil)
	is.Equal(*task.Deadline, task.OpenedAt.Add(300*time.Millisecond))
	is.Equal(task.Decisions, []string{"complete"})
	is.Equal(task.Assignees, []string{"group:finance"})

	done := h.waitRun(op, run.ID, "succeeded")
	is.Equal(string(done.State.Output), `{"late":true}`)
	closed := h.waitHuman(op, task.ID, "closed")
	is.Equal(closed.CloseReason, "timeout")
	is.Equal(closed.Revision, int64(2))
	is.True(closed.ClosedAt != nil)
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(op, task.ID, "complete", map[string]any{"decision": "complete"}, "dl-c", ""))
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(op, task.ID, "claim", nil, "dl-claim", ""))
	h.must(200, h.get(ePath(h)+"/human-tasks?status=closed", op), &page)
	is.Equal(humanIDs(page), []string{task.ID})
}

func TestHumanTaskCancelClosesIt(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, op, run, task := reviewRun(t, "cn-1", map[string]any{"orderId": "o-1"})
	h.must(200, h.cancelRun(op, run.ID, map[string]string{"reason": "not needed"}), nil)
	closed := h.humanTask(op, task.ID)
	is.Equal(closed.Status, "closed")
	is.Equal(closed.CloseReason, "cancelled")
	is.Equal(closed.Revision, int64(2))
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(op, task.ID, "claim", nil, "cn-c", ""))
	h.problem(409, "PF-RUNTIME-STATE", h.humanDo(op, task.ID, "complete",
		map[string]any{"decision": "approve", "data": map[string]any{"comment": "x"}}, "cn-d", ""))
}

func TestHumanTaskPausedRun(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, op, run, task := reviewRun(t, "pz-1", map[string]any{"orderId": "o-1"})
	h.must(200, h.pauseRun(op, run.ID, "pause", nil, "pz-pause"), nil)

	// Checked against the run's state now, though the run is paused.
	h.problem(422, "PF-VALIDATION", h.humanDo(op, task.ID, "complete", map[string]any{"decision": "approve", "data": map[string]any{}}, "pz-bad", ""))
	h.problem(422, "PF-VALIDATION", h.humanDo(op, task.ID, "complete", map[string]any{"decision": "maybe", "data": map[string]any{"comment": "x"}}, "pz-bad2", ""))
	body := map[string]any{"decision": "approve", "data": map[string]any{"comment": "held"}}
	is.Equal(h.mustHuman(op, task.ID, "complete", body, "pz-c").Status, "completed")
	paused := h.waitRun(op, run.ID, "waiting")
	is.True(paused.Paused)
	is.True(!strings.Contains(strings.Join(historyKinds(h.runHistory(op, run.ID)), ","), "human_completed"))

	h.must(200, h.pauseRun(op, run.ID, "resume", nil, "pz-resume"), nil)
	done := h.waitRun(op, run.ID, "succeeded")
	is.True(strings.Contains(string(done.State.Output), `"comment":"held"`))
	is.Equal(h.humanTask(op, task.ID).Status, "completed")
}

func TestHumanTaskSurvivesRestart(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, op, run, task := reviewRun(t, "rs-1", map[string]any{"orderId": "o-1"})
	claimed := h.mustHuman(op, task.ID, "claim", nil, "rs-claim")

	h.restart(true)
	op = h.localToken()
	is.Equal(h.humanTask(op, task.ID), claimed)
	// The idempotency record survives too.
	rep := h.humanDo(op, task.ID, "claim", nil, "rs-claim", "")
	is.Equal(rep.status, http.StatusOK)
	is.Equal(rep.header.Get("Idempotent-Replayed"), "true")
	h.mustHuman(op, task.ID, "complete", map[string]any{"decision": "approve", "data": map[string]any{"comment": "after restart"}}, "rs-c")
	done := h.waitRun(op, run.ID, "succeeded")
	is.True(strings.Contains(string(done.State.Output), `"comment":"after restart"`))
}
