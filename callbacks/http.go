package callbacks

import (
	"context"
	"encoding/json"
	"errors"
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

// handler is an HTTP handler that returns its error for writeError.
type handler func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error

// route is one endpoint: how it is served and how it is documented. The
// OpenAPI document is generated from the same table Routes registers, so the
// two cannot drift apart.
type route struct {
	method, path string
	public       bool // served without the owner token (documentation)
	h            handler
	op           operation
}

// Routes registers the service's endpoints on the services listener's router.
//
// Authentication: every /api/v1 endpoint requires the daemon's owner token
// (Authorization: Bearer <owner.token>); the OpenAPI document and its UI are
// public, as they hold no data.
func (s *Service) Routes(r *httprouter.Router) {
	for _, rt := range s.routes() {
		r.Handle(rt.method, rt.path, s.serve(rt))
	}
}

func (s *Service) serve(rt route) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		if !rt.public {
			w.Header().Set("Cache-Control", "no-store")
			// Two Authorization headers are refused rather than judged by
			// the first (callbacks/README.md, "Authentication").
			if _, err := httpx.SingleHeader(r.Header, "Authorization"); err != nil {
				s.writeError(w, r, &Error{Code: EBadRequest, Message: err.Error()})
				return
			}
			if !s.isOwner(r) {
				s.writeError(w, r, &Error{Code: EUnauthorized, Message: "this API needs the owner token: Authorization: Bearer <contents of owner.token>"})
				return
			}
		}
		if err := rt.h(w, r, p); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// writeError is the one place that maps errors to problem+json responses.
func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p, body := httpx.BodyProblem(err, "CB")
	if !body {
		p = &httpx.Problem{Status: http.StatusInternalServerError, Code: "CB-INTERNAL", Message: "internal error"}
	}
	var e *Error
	switch {
	case body:
	case errors.As(err, &e):
		p.Message = e.Message
		switch e.Code {
		case EInvalid:
			p.Status, p.Code = http.StatusUnprocessableEntity, "CB-VALIDATION"
		case EBadRequest:
			p.Status, p.Code = http.StatusBadRequest, "CB-BAD-REQUEST"
		case ENotFound:
			p.Status, p.Code = http.StatusNotFound, "CB-NOT-FOUND"
		case EConflict:
			p.Status, p.Code = http.StatusConflict, "CB-CONFLICT"
		case EDomainNotAuthorized:
			p.Status, p.Code = http.StatusConflict, "CB-DOMAIN-NOT-AUTHORIZED"
		case ENotFoundEventExpired:
			p.Status, p.Code = http.StatusConflict, "CB-EVENT-EXPIRED"
		case EUnauthorized:
			p.Status, p.Code = http.StatusUnauthorized, "CB-UNAUTHORIZED"
		case EUnavailable:
			p.Status, p.Code = http.StatusServiceUnavailable, "CB-UNAVAILABLE"
		default:
			p.Message = "internal error"
		}
		for _, f := range e.Fields {
			p.Diagnostics = append(p.Diagnostics, f)
		}
	case errors.Is(err, context.Canceled):
		p.Status, p.Code, p.Message = http.StatusServiceUnavailable, "CB-UNAVAILABLE", "the request was cancelled"
	}
	// Only the service's own failures are errors; a refused request is the
	// client's (DEBUG), an unavailable service a WARN.
	attrs := []any{"method", r.Method, "path", r.URL.Path, "status", p.Status, "request_id", httpx.RequestID(r), "err", err}
	switch {
	case p.Status == http.StatusInternalServerError:
		s.log.Error("callbacks: request failed", attrs...)
	case p.Status >= 500:
		s.log.Warn("callbacks: request not served", attrs...)
	default:
		s.log.Debug("callbacks: request refused", attrs...)
	}
	httpx.WriteProblem(w, r, p)
}

// decodeBody reads a request body strictly: JSON content type, at most
// maxBodyBytes, one value, and none of what encoding/json would let through
// silently (duplicate keys, invalid UTF-8, lone surrogates: httpx.CheckJSON);
// then no unknown fields.
func decodeBody[T any](w http.ResponseWriter, r *http.Request) (T, error) {
	var v T
	var raw json.RawMessage
	opts := httpx.DecodeOptions{MaxBytes: maxBodyBytes}
	if err := httpx.DecodeJSON(w, r, &raw, opts); err != nil {
		return v, err
	}
	if err := httpx.CheckJSON(raw); err != nil {
		return v, &Error{Code: EBadRequest, Message: err.Error()}
	}
	return v, httpx.DecodeBytes(raw, &v, opts)
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
