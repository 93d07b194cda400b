package ingest

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/httpx/docsui"
)

// Routes of the ingest surface on the services listener (ingest/README.md,
// "Routes"): the ingestion endpoint, public, and the management API, owner
// token only (the CLI's `bridge webhooks ...`).
const (
	pathWebhook   = "/api/v1/webhook/{provider}"
	pathEvents    = "/api/v1/webhook-events"
	pathStream    = "/api/v1/webhook-events/stream"
	pathDLQ       = "/api/v1/webhook-dlq"
	pathDLQEntry  = "/api/v1/webhook-dlq/{event_id}"
	pathDLQReplay = "/api/v1/webhook-dlq/{event_id}/replay"
	// PathAPIDocs serves the OpenAPI document of the surface.
	PathAPIDocs = docsui.IngestDocURL
)

// Routes registers the route table on the services listener's router with
// the toolkit's Surface: the owner-token guard on the management routes,
// and every error written through the one error table (errors.go).
func (s *Service) Routes(r *httprouter.Router) {
	surface := &httpx.Surface{Encode: writeError, Guard: s.guard}
	surface.Register(r, s.routes())
}

var errUnauthorized = newError("WH-UNAUTHORIZED", "unauthorized", "the owner token is required (Authorization: Bearer)")

// guard admits a management request: the owner token, sent once.
func (s *Service) guard(_ http.ResponseWriter, r *http.Request) error {
	if _, err := httpx.SingleHeader(r.Header, "Authorization"); err != nil {
		// Which of two tokens was meant is a guess (issue 20, item 7).
		return newError("WH-INVALID-HEADER", "invalid_header", err.Error())
	}
	if s.isOwner == nil || !s.isOwner(r) {
		return errUnauthorized
	}
	return nil
}

// errorText describes the problems an operation documents.
var errorText = map[int]string{
	400: "Malformed request: bad provider name, body, query parameter or cursor",
	401: "Missing or wrong owner token",
	403: "The source address may not post webhooks for this provider",
	404: "No dead letter with that event id",
	405: "A method outside security.allowed-methods (Allow lists them)",
	408: "The body was not received within listen.body-read-timeout",
	409: "The dead letter cannot be replayed (no payload kept, or no valid topic)",
	413: "Body larger than security.max-payload-size",
	415: "A Content-Type outside security.allowed-content-types",
	422: "The event cannot be published (e.g. larger than the broker accepts)",
	429: "Too many webhooks for this provider (Retry-After)",
	431: "Request headers too large to forward",
	503: "Overloaded, shutting down or the broker failed (Retry-After); retry",
}

// schemaStyle: a field is required unless omitempty, as the JSON sent.
var schemaStyle = httpx.SchemaStyle{RequiredUnlessOmitempty: true, NullableAnyOf: true, DocBesideRef: true}

var (
	stringSchema  = map[string]any{"type": "string"}
	integerSchema = map[string]any{"type": "integer"}
)

// doc documents a route of the table.
func doc(id, summary, description string, public bool, status int, resp any, errs ...int) httpx.Operation {
	op := httpx.Operation{ID: id, Summary: summary, Description: description, Tags: []string{"webhooks"},
		Security: []string{"ownerToken"}}
	if public {
		op.Security = []string{}
	}
	ok := httpx.Response{Status: httpx.Status(status), Description: http.StatusText(status)}
	switch resp := resp.(type) {
	case nil:
	case string:
		ok.Media = resp
	default:
		ok.Media, ok.Schema = "application/json", resp
	}
	op.Responses = []httpx.Response{ok}
	for _, code := range errs {
		op.Responses = append(op.Responses, httpx.Response{Status: httpx.Status(code), Description: errorText[code],
			Media: "application/problem+json", Schema: httpx.Problem{}})
	}
	return op
}

func query(name, description string, schema map[string]any) httpx.Param {
	return httpx.Param{Name: name, In: "query", Description: description, Schema: schema}
}

var (
	limitParam  = query("limit", "page size, 1 to 500 (default 50)", integerSchema)
	cursorParam = query("cursor", "next_cursor of the previous page; valid only for the same filters", stringSchema)
	provParam   = query("provider", "only this provider's webhooks", stringSchema)
)

// routes is the surface's route table; the OpenAPI document is generated
// from it (openAPI).
func (s *Service) routes() []httpx.Route {
	receive := doc("webhook.receive", "Receive a provider webhook",
		"Validates the request (provider name, rate limit, method, source address, content type, size, body) and answers 202 "+
			"only once the event is durably published on the provider's topic; a refused request is dead-lettered with its reason "+
			"(429 and 503 are not: retry them). Signatures are verified later, by the processors (ingest/README.md). "+
			"Other methods are served too and answer 405 unless listed in security.allowed-methods.",
		true, http.StatusAccepted, Ack{}, 400, 403, 405, 408, 413, 415, 422, 429, 431, 503)
	receive.Params = []httpx.Param{{Name: "provider", In: "path", Schema: stringSchema}}
	receive.Request = map[string]any{"description": "the provider's payload as sent: JSON, a form or another allowed content type"}
	receive.Responses[0].Headers = map[string]httpx.Header{"X-Webhook-Event-Id": {Description: "the event id, as in the body", Schema: stringSchema}}

	events := doc("webhook-events.list", "List processed webhooks, most recent first", "", false, http.StatusOK, Page[Record]{}, 400, 401)
	events.Params = []httpx.Param{provParam,
		query("status", "only this outcome", map[string]any{"type": "string", "enum": []any{StatusVerified, StatusUnverified, StatusDuplicate, StatusFailed}}),
		limitParam, cursorParam}
	stream := doc("webhook-events.stream", "Follow webhook activity as Server-Sent Events",
		"\"event: activity\" with an Activity as data, \"event: lagged\" with {\"dropped\":n} when this client fell behind, \": ping\" comments every 15 s.",
		false, http.StatusOK, "text/event-stream", 400, 401)
	stream.Params = []httpx.Param{provParam}
	dlq := doc("webhook-dlq.list", "List dead letters, most recent first", "", false, http.StatusOK, Page[DLQEntry]{}, 400, 401)
	dlq.Params = []httpx.Param{provParam, query("pending", "true: only those not replayed yet", map[string]any{"type": "boolean"}), limitParam, cursorParam}
	eventID := httpx.Param{Name: "event_id", In: "path", Schema: stringSchema}
	entry := doc("webhook-dlq.get", "Read a dead letter with its headers and payload (base64)", "", false, http.StatusOK, DLQEntry{}, 401, 404)
	entry.Params = []httpx.Param{eventID}
	replay := doc("webhook-dlq.replay", "Publish a dead letter's event again",
		"Republishes the event, with the same event id, to its provider's topic and marks the entry replayed.",
		false, http.StatusAccepted, DLQEntry{}, 401, 404, 409, 503)
	replay.Params = []httpx.Param{eventID}

	webhook := func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		s.handleWebhook(w, r, p)
		return nil
	}
	var rs []httpx.Route
	for _, m := range knownMethods {
		rs = append(rs, httpx.Route{Method: m, Path: pathWebhook, Handler: webhook, Public: true, Undocumented: m != http.MethodPost, Doc: receive})
	}
	rs = append(rs,
		httpx.Route{Method: http.MethodGet, Path: pathEvents, Handler: s.handleListEvents, Doc: events},
		httpx.Route{Method: http.MethodGet, Path: pathStream, Handler: s.handleStream, Doc: stream},
		httpx.Route{Method: http.MethodGet, Path: pathDLQ, Handler: s.handleListDLQ, Doc: dlq},
		httpx.Route{Method: http.MethodGet, Path: pathDLQEntry, Handler: s.handleGetDLQ, Doc: entry},
		httpx.Route{Method: http.MethodPost, Path: pathDLQReplay, Handler: s.handleReplay, Doc: replay},
	)
	docs := httpx.ServeDocument(func() map[string]any { return openAPI(rs) })
	serveDocs := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		docs(w, r)
		return nil
	}
	return append(rs,
		httpx.Route{Method: http.MethodGet, Path: PathAPIDocs, Handler: serveDocs, Public: true, Undocumented: true},
		httpx.Route{Method: http.MethodHead, Path: PathAPIDocs, Handler: serveDocs, Public: true, Undocumented: true})
}

// openAPI builds the surface's OpenAPI 3.1 document with the toolkit's
// generator.
func openAPI(routes []httpx.Route) map[string]any {
	g := httpx.NewOpenAPI(schemaStyle)
	g.Schema(Activity{}) // the data of the stream's activity events
	g.AddRoutes(routes)
	return g.Build(httpx.Document{
		Info: httpx.Info{
			Title:   "Agent Bridge webhook ingestion",
			Version: "1.0.0",
			Description: "Provider webhooks in (POST /api/v1/webhook/{provider}, no token: providers sign their webhooks), and the " +
				"management API of processed webhooks and dead letters, which needs the daemon's owner token " +
				"(`Authorization: Bearer <contents of owner.token in the data directory>`). Errors are application/problem+json " +
				"with a WH- code. See ingest/README.md for the envelope, the dead letters and the configuration.",
		},
		Servers:         []string{"/"},
		ListTags:        true,
		SecuritySchemes: httpx.OwnerTokenScheme(),
	})
}
