package api

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/platform/auth"
)

// Layout says under which paths a route is served.
type Layout int

const (
	// Versioned routes are served at Prefix+Path (canonical) and at Path
	// (the unprefixed compatibility route), by the same handler, without
	// redirect.
	Versioned Layout = iota
	// Root routes keep their own path only (/admin/tenants, /admin/grants,
	// /docs).
	Root
)

// Access says who may call a route.
type Access int

const (
	// AccessToken needs a bearer token of a configured identity provider
	// whose sign-in is linked to an enabled principal.
	AccessToken Access = iota
	// AccessPublic needs nothing (sign-in settings, documentation).
	AccessPublic
	// AccessOwnerOrToken also accepts the daemon owner token, which
	// authenticates the built-in system principal (platform administration
	// only). Used by the /admin routes.
	AccessOwnerOrToken
)

// Policy says whether a request header is ignored, optional or required.
type Policy int

const (
	PolicyNone Policy = iota
	PolicyOptional
	PolicyRequired
)

// HandlerFunc serves one request. It writes its success response through
// the Call and returns errors (preferably *Error) for WriteError.
type HandlerFunc func(c *Call) error

// Route is one platform operation: how it is served, authorized and
// documented. The OpenAPI document is generated from the same values, so
// the two cannot drift apart.
type Route struct {
	Method string
	// Path is the template relative to Prefix for Versioned routes, with
	// parameters in braces: "/tenants/{tenant}/projects/{project}".
	Path   string
	Layout Layout
	Access Access
	// Capability, when set, is checked before the handler runs at the scope
	// named by the path parameters {tenant}, {project} and {environment}
	// (each must be a canonical UUID, else 404). Routes whose scope comes
	// from the body leave it empty and call Call.Authorize themselves.
	Capability auth.Capability
	// Idempotency and IfMatch declare the Idempotency-Key and If-Match
	// headers; they are checked (422 PF-IDEMPOTENCY / PF-ETAG) before the
	// handler runs.
	Idempotency Policy
	IfMatch     Policy
	// MaxBody bounds the request body (default Options.MaxBodyBytes).
	MaxBody int64
	Handler HandlerFunc

	// Documentation.
	OperationID string
	Summary     string
	Description string
	Tag         string
	// Request and Response are zero values of the body types (nil: none).
	Request  any
	Response any
	// Status is the success status (default 200).
	Status int
	// Query documents the query parameters.
	Query []Param
	// ETag documents that the success response carries an ETag.
	ETag bool
	// Page documents a paginated list of Response items.
	Page bool
}

// Param documents a query parameter.
type Param struct {
	Name        string
	Description string
	Type        string // "string", "integer" or "boolean"
}

// scopeParams are the path parameters that name the authorization scope.
var scopeParams = [...]string{"tenant", "project", "environment"}

// paths returns the concrete paths the route is served at, canonical first.
func (rt *Route) paths() []string {
	if rt.Layout == Root {
		return []string{rt.Path}
	}
	return []string{Prefix + rt.Path, rt.Path}
}

// CanonicalPath is the route's canonical path template.
func (rt *Route) CanonicalPath() string { return rt.paths()[0] }

// routerPath converts "{name}" segments to httprouter's ":name".
func routerPath(p string) string { return httpx.RouterPath(p) }

// pathParams lists the parameter names of a template in order.
func pathParams(p string) []string { return httpx.PathParams(p) }

// fill substitutes parameter values into a template (for idempotency scopes).
func fill(tmpl string, ps httprouter.Params) string {
	segs := strings.Split(tmpl, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			segs[i] = ps.ByName(s[1 : len(s)-1])
		}
	}
	return strings.Join(segs, "/")
}

func (rt *Route) successStatus() int {
	if rt.Status == 0 {
		return http.StatusOK
	}
	return rt.Status
}

// allowsQuery reports whether the route declares the query parameter.
func (rt *Route) allowsQuery(name string) bool {
	if rt.Page && (name == "limit" || name == "cursor") {
		return true
	}
	for _, q := range rt.Query {
		if q.Name == name {
			return true
		}
	}
	return false
}
