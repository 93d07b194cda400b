package source

import (
	"database/sql"
	"errors"
	"net/http"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// tagReceipts is the OpenAPI tag of the routes.
const tagReceipts = "Provider receipts"

// receiptBase is E/provider-receipts relative to api.Prefix.
const receiptBase = envBase + "/provider-receipts"

var receiptStatuses = []string{StatusPending, StatusDispatched, StatusIgnored, StatusBlocked, StatusFailed}

func (s *Service) receiptRoutes() []api.Route {
	return []api.Route{
		{Method: http.MethodGet, Path: receiptBase, Capability: auth.CapRunRead, Page: true, Handler: s.listReceipts,
			OperationID: "listProviderReceipts", Tag: tagReceipts, Summary: "List the environment's provider receipts",
			Description: "In id order (admission order). Filters source_id and status. The stored payload is never shown. Needs run.read.",
			Query: []api.Param{{Name: "source_id", Type: "string", Description: "only this source's receipts"},
				{Name: "status", Type: "string", Description: "pending, dispatched, ignored, blocked or failed"}},
			Response: api.Page[Receipt]{}},
		{Method: http.MethodGet, Path: receiptBase + "/{identifier}", Capability: auth.CapRunRead, Handler: s.getReceipt,
			OperationID: "getProviderReceipt", Tag: tagReceipts, Summary: "Read a provider receipt (never its payload)", Response: Receipt{}},
		{Method: http.MethodPost, Path: receiptBase + "/{identifier}/retry", Capability: auth.CapRunRetry, Idempotency: api.PolicyOptional,
			Handler: s.retryReceipt, OperationID: "retryProviderReceipt", Tag: tagReceipts, Summary: "Retry a blocked or failed receipt",
			Description: "Needs run.retry and the source's target capability (run.start or run.signal); the source's owner must still hold its " +
				"capabilities and binding (403 otherwise) and the source must be enabled (a disabled source cannot be re-enabled: 409 PF-CONFLICT). " +
				"The receipt becomes pending at once with the same event identity; a receipt in another status answers 409 PF-CONFLICT.",
			Response: Receipt{}},
	}
}

// readReceipt loads the receipt named by the path in the path's environment.
func (s *Service) readReceipt(c *api.Call, q store.Querier) (receiptRow, error) {
	id, err := c.UUIDParam("identifier", "provider receipt")
	if err != nil {
		return receiptRow{}, err
	}
	if err := requireEnvironment(c, q); err != nil {
		return receiptRow{}, err
	}
	r, err := getReceipt(c.Context(), q, id)
	if errors.Is(err, errNotFound) || (err == nil && r.Environment != c.PathScope().Environment) {
		return receiptRow{}, api.NotFound("provider receipt")
	}
	return r, err
}

// listReceipts serves GET E/provider-receipts.
func (s *Service) listReceipts(c *api.Call) error {
	source, err := c.Query("source_id")
	if err != nil {
		return err
	}
	if source != "" && !auth.IsCanonicalUUID(source) {
		return api.InvalidParameter(api.CodeValidation, "source_id", "source_id is a canonical lowercase UUID")
	}
	status, err := c.Query("status")
	if err != nil {
		return err
	}
	if status != "" && !contains(receiptStatuses, status) {
		return api.InvalidParameter(api.CodeValidation, "status", "status is one of %v", receiptStatuses)
	}
	q, err := c.PageQuery("provider-receipts", map[string]string{"source_id": source, "status": status})
	if err != nil {
		return err
	}
	r := s.db.Reader()
	if err := requireEnvironment(c, r); err != nil {
		return err
	}
	rows, err := listReceipts(c.Context(), r, c.PathScope().Environment, source, status, q.After, q.Fetch())
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, rows, func(x Receipt) string { return x.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// getReceipt serves GET E/provider-receipts/{identifier}.
func (s *Service) getReceipt(c *api.Call) error {
	r, err := s.readReceipt(c, s.db.Reader())
	if err != nil {
		return err
	}
	return c.OK(r.Receipt)
}

// retryReceipt serves POST E/provider-receipts/{identifier}/retry.
func (s *Service) retryReceipt(c *api.Call) error {
	ctx, sc := c.Context(), c.PathScope()
	cur, err := s.readReceipt(c, s.db.Reader())
	if err != nil {
		return err
	}
	src, err := getSource(ctx, s.db.Reader(), cur.SourceID)
	if err != nil {
		return err
	}
	if err := c.Authorize(capability(src.Kind), sc); err != nil {
		return err
	}
	if src.Disabled {
		return api.Conflict(api.CodeConflict, "the provider source is disabled for good; its receipts cannot be retried")
	}
	if why, err := s.authority(ctx, src); err != nil {
		return err
	} else if why != "" {
		return api.Forbidden("the provider source's owner no longer holds %s in the environment", why)
	}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		ok, err := requeue(ctx, tx, cur.ID, s.timestamp())
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, api.Conflict(api.CodeConflict, "only a blocked or failed receipt is retried (status %s)", cur.Status)
		}
		r, err := getReceipt(ctx, tx, cur.ID)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: r.Receipt}, nil
	}, s.runs.Notify)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
