// Package api is the platform's layer over the daemon's HTTP toolkit
// (httpx): the shared rules of docs/platform-api.md ("Common envelopes",
// "Authentication", "Errors", "Limits", "Versioning", "Generic rules"),
// built once for every platform route. What is the platform's own lives
// here: access checks (Caller, Authenticator, Auditor), the PF- error table
// (codes.go) and problem+json encoder (errors.go), pages and If-Match; the OpenAPI
// generator, the idempotency store, strict decoding and cursors are the
// toolkit's, shared with the other surfaces.
//
// A route is declared as data and registered with API.Handle:
//
//	a.Handle(router, api.Route{
//		Method: "POST", Path: "/tenants/{tenant}/projects/{project}/workflows",
//		Capability:  auth.CapDefinitionPublish, // checked at the path's scope
//		Idempotency: api.PolicyRequired,        // Idempotency-Key, 1..200 chars
//		Status: 201, Request: PublishRequest{}, Response: Version{}, // documentation
//		Handler: func(c *api.Call) error {
//			var req PublishRequest
//			if err := c.Decode(&req); err != nil { // strict JSON, 413/422
//				return err
//			}
//			return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
//				... // the change, in a group-committed transaction
//				return &api.Result{Body: v, Revision: 1, Location: ...}, nil
//			}, nil)
//		},
//	})
//
// Handle serves it at the canonical path (Prefix + Path) and at the
// unprefixed compatibility path (Layout Versioned; Root routes keep their
// own path), and a GET also for HEAD (same status and headers, no body).
// Before the handler runs, in this order: the request gets a
// server-generated id (X-Platform-Request-ID) and the wire version header;
// the caller is authenticated (401 PF-UNAUTHENTICATED with WWW-Authenticate:
// Bearer; AccessPublic routes skip it, AccessOwnerOrToken also accepts the
// daemon owner token); the {tenant}, {project} and {environment} parameters
// must be canonical UUIDs (404 PF-NOT-FOUND); the declared Capability is
// authorized at that scope and the decision recorded (403 PF-FORBIDDEN);
// undeclared query parameters are refused, and Idempotency-Key and If-Match
// are checked (422 PF-VALIDATION, PF-IDEMPOTENCY, PF-ETAG). Handlers return
// coded errors (no status: the table in codes.go gives it); WriteError is
// the one place that writes them, as
// application/problem+json with status, code, message, request_id and
// diagnostics, never a cause's text (5xx causes are logged with the
// request id).
//
// Helpers on Call: Decode/DecodeOptional (httpx.DecodeBytes), Authorize (any
// further capability check, recorded), Record (any other access decision),
// UUIDParam, Query, IfMatch (+ CheckRevision for 412), IdempotencyKey,
// Commit (idempotent changes: the same key, principal, scope and canonical
// body replay the committed result with Idempotent-Replayed: true, another
// body answers 409 PF-IDEMPOTENCY-CONFLICT; the record is committed in the
// change's transaction), PageQuery + MakePage (pages of items in id order,
// limit 1..100 default 50, HMAC-authenticated cursors bound to the path's
// tenant, project and environment, the collection and the filters), JSON,
// OK, Raw and Respond (ETag as a quoted revision, Location).
//
// API.NotFound wraps the router's unknown-route handler: under the
// platform's paths an unauthenticated request answers 401 and an
// authenticated one 404. API.OpenAPI builds the OpenAPI 3.1 document from
// the registered routes (and Describe'd ones); ServeDocs serves it with an
// embedded viewer at /docs.
//
// The toolkit needs the platform_idempotency table of the platform's
// 0001_boot migration.
package api
