package callbacks

import (
	"net/http"

	"github.com/agentbridge/bridge/httpx"
)

// executionQueryFields are the eq filters GET /callback-executions takes as
// query parameters.
var executionQueryFields = []string{"configurationId", "deliveryId", "eventId", "eventType", "state", "trigger"}

func (s *Service) executionRoutes() []httpx.Route {
	var page PaginationResponse[Execution]
	query := append([]param{}, pageParams...)
	for _, f := range executionQueryFields {
		query = append(query, param{name: f, doc: "only executions whose " + f + " equals this"})
	}
	return []httpx.Route{
		route(http.MethodGet, pathExecutions, httpx.Serve(queryOf(executionQueryFields...), s.filterExecutions, http.StatusOK), operation{
			id: "list", tag: "callback-executions", summary: "Query executions (newest first)",
			query: query, status: http.StatusOK, resp: page, errs: []int{400, 401, 422}}),
		route(http.MethodPost, pathExecutions+"/filter", httpx.Serve(bodyOf[FilterRequest](), s.filterExecutions, http.StatusOK), operation{
			id: "filter", tag: "callback-executions", summary: "Filter, sort and page executions",
			body: FilterRequest{}, status: http.StatusOK, resp: page, errs: []int{400, 401, 413, 415, 422}}),
		route(http.MethodGet, pathExecutions+"/{id}", httpx.Serve(idOf("callback execution"), s.execution, http.StatusOK), operation{
			id: "get", tag: "callback-executions", summary: "Read an execution", status: http.StatusOK, resp: Execution{}, errs: []int{401, 404}}),
		route(http.MethodPost, pathExecutions+"/retry", httpx.ServeCreated(bodyOf[RetryRequest](), s.Retry, executionLocation), operation{
			id: "retry", tag: "callback-executions", summary: "Deliver a finished execution's event again",
			description: "Starts a new delivery (attempt 1, trigger MANUAL_RETRY, retryOf set) with a full budget of attempts. " +
				"404 for an unknown execution; 409 while the execution is still open, when its configuration is deleted or not ACTIVE, " +
				"when its domain is no longer authorized (CB-DOMAIN-NOT-AUTHORIZED) or when the event's payload is no longer retained (CB-EVENT-EXPIRED).",
			body: RetryRequest{}, status: http.StatusCreated, resp: Execution{}, errs: []int{400, 401, 404, 409, 413, 415, 422}}),
		route(http.MethodPost, pathExecutions+"/replay", httpx.Serve(bodyOf[ReplayRequest](), s.Replay, http.StatusAccepted), operation{
			id: "replay", tag: "callback-executions", summary: "Deliver the events received since a time again",
			description: "Each event received in [since, until] becomes a new delivery (trigger REPLAY) to every ACTIVE configuration " +
				"subscribed to its type, or to configurationId only. 404 for an unknown configuration, 409 when it cannot take deliveries.",
			body: ReplayRequest{}, status: http.StatusAccepted, resp: ReplayResult{}, errs: []int{400, 401, 404, 409, 413, 415, 422}}),
	}
}

// executionLocation is where a new execution is read.
func executionLocation(ex Execution) string { return pathExecutions + "/" + ex.ID }
