package callbacks

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
)

// API paths, under the services listener.
const (
	apiPrefix         = "/api/v1"
	pathDomains       = apiPrefix + "/authorized-domains"
	pathConfigs       = apiPrefix + "/callback-configurations"
	pathSubscriptions = apiPrefix + "/event-subscriptions"
	pathExecutions    = apiPrefix + "/callback-executions"
	pathAPIDocs       = "/v3/api-docs"
	pathSwaggerUI     = "/swagger-ui.html"
)

// maxBodyBytes bounds every request body of the management API.
const maxBodyBytes = 64 << 10

// Routes registers the service's route table on the services listener's
// router, with the toolkit's Surface: the guard below on every /api/v1
// route, and every error written by the one error table (errors.go).
//
// Authentication: every /api/v1 endpoint requires the daemon's owner token
// (Authorization: Bearer <owner.token>); the OpenAPI document and its UI are
// public, as they hold no data.
func (s *Service) Routes(r *httprouter.Router) {
	surface := &httpx.Surface{Encode: httpx.ProblemEncoder(&errorTable, s.log, "callbacks"), Guard: s.guard}
	surface.Register(r, s.routes())
}

// guard admits a request to a protected route: the owner token, sent once.
func (s *Service) guard(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	// Two Authorization headers are refused rather than judged by the
	// first (callbacks/README.md, "Authentication").
	if _, err := httpx.SingleHeader(r.Header, "Authorization"); err != nil {
		return &Error{Code: EBadRequest, Message: err.Error()}
	}
	if !s.isOwner(r) {
		return &Error{Code: EUnauthorized, Message: "this API needs the owner token: Authorization: Bearer <contents of owner.token>"}
	}
	return nil
}

// bodyRules are the rules of every request body (httpx.DecodeJSON): JSON
// content type, at most maxBodyBytes, one value, none of what
// encoding/json would let through silently (duplicate keys, invalid
// UTF-8, lone surrogates), no unknown fields.
var bodyRules = httpx.DecodeOptions{MaxBytes: maxBodyBytes}

// decodeBody reads a request body strictly (bodyRules).
func decodeBody[T any](w http.ResponseWriter, r *http.Request) (T, error) {
	return httpx.JSONBody[T](bodyRules)(w, r, nil)
}

// The readers of the route handlers' typed requests (httpx.Serve).

// bodyOf reads the body as a T.
func bodyOf[T any]() httpx.Reader[T] { return httpx.JSONBody[T](bodyRules) }

// idOf reads the :id parameter of a what ("callback execution").
func idOf(what string) httpx.Reader[string] {
	return func(_ http.ResponseWriter, _ *http.Request, p httprouter.Params) (string, error) {
		return pathID(p, what)
	}
}

// queryOf reads a GET collection's query (listQuery).
func queryOf(eqFields ...string) httpx.Reader[FilterRequest] {
	return func(_ http.ResponseWriter, r *http.Request, _ httprouter.Params) (FilterRequest, error) {
		return listQuery(r.URL.Query(), eqFields...)
	}
}

// pathID reads the :id parameter; a value that is not a UUID names nothing.
func pathID(p httprouter.Params, what string) (string, error) {
	raw := p.ByName("id")
	id, ok := canonicalID(raw)
	if !ok {
		return "", errNotFound(what + " " + strconv.Quote(truncate(raw, 64)))
	}
	return id, nil
}

// listQuery turns the query string of a GET collection into a FilterRequest:
// page, size and cursor, plus eq filters on the names in eqFields.
func listQuery(q url.Values, eqFields ...string) (FilterRequest, error) {
	var req FilterRequest
	for key, vals := range q {
		if len(vals) != 1 {
			return req, errorf(EBadRequest, "query parameter %q must be given once", key)
		}
		v := vals[0]
		switch {
		case key == "page" || key == "size":
			n, err := strconv.Atoi(v)
			if err != nil {
				return req, errorf(EBadRequest, "query parameter %s must be a whole number", key)
			}
			if key == "page" {
				req.Page = &n
			} else {
				req.Size = &n
			}
		case key == "cursor":
			req.Cursor = v
		case slices.Contains(eqFields, key):
			req.Filters = append(req.Filters, FieldFilter{Field: key, Operator: "eq", Value: jsonString(v)})
		default:
			allowed := append([]string{"page", "size", "cursor"}, eqFields...)
			return req, errorf(EBadRequest, "unknown query parameter %q (allowed: %s)", key, strings.Join(allowed, ", "))
		}
	}
	slices.SortFunc(req.Filters, func(a, b FieldFilter) int { return strings.Compare(a.Field, b.Field) })
	return req, nil
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
