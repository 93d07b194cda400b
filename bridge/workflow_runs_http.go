package bridge

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
)

// Routes registers the workflow-run routes on the bridge listener (once;
// they appear in the bridge's OpenAPI document).
func (w *WorkflowRuns) Routes(r *httprouter.Router) {
	w.s.register(r, []httpx.Route{
		w.s.route("POST", "/v1/bridge/workflow-runs", ScopeWorkflows, w.handleStart, opDoc{
			summary: "Start a run of a workflow published and active in the local project (202); 422 unknown_template, template_not_active or invalid_inputs; 503 workflows_unavailable without the platform",
			params:  []httpx.Param{idemHeader}, body: ref("WorkflowRunRequest"), success: "202", response: "WorkflowRun",
		}),
		w.s.route("GET", "/v1/bridge/workflow-runs", ScopeRead, w.handleList, opDoc{
			summary: "This client's workflow runs, newest first (at most 200)", success: "200", response: "WorkflowRunList",
		}),
		w.s.route("GET", "/v1/bridge/workflow-runs/{id}", ScopeRead, w.handleGet, opDoc{summary: "One workflow run, read from the platform's run", success: "200", response: "WorkflowRun"}),
	})
}

func (w *WorkflowRuns) handleStart(rw http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	var req WorkflowRunRequest
	key, err := decodeChange(r, &req)
	if err != nil {
		return err
	}
	run, replayed, err := w.Start(r.Context(), p, req, key.Key)
	if err != nil {
		return err
	}
	if replayed {
		rw.Header().Set("Idempotent-Replayed", "true")
	}
	rw.Header().Set("Location", "/v1/bridge/workflow-runs/"+run.ID)
	return respond(rw, http.StatusAccepted, run)
}

func (w *WorkflowRuns) handleList(rw http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	list, err := w.List(r.Context(), p)
	if err != nil {
		return err
	}
	return respond(rw, http.StatusOK, list)
}

func (w *WorkflowRuns) handleGet(rw http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	id, err := jobID(ps) // the same UUID rule as job ids
	if err != nil {
		return errf(CodeInvalidParameter, "workflow run id must be a UUID")
	}
	run, err := w.Get(r.Context(), p, id)
	if err != nil {
		return err
	}
	return respond(rw, http.StatusOK, run)
}
