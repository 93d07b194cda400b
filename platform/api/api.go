package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// DefaultMaxBodyBytes bounds request bodies of routes without their own
// MaxBody.
const DefaultMaxBodyBytes = 1 << 20

// Options configures New.
type Options struct {
	// DB holds the idempotency records (table platform_idempotency of the
	// platform's 0001_boot migration).
	DB *store.DB
	// Authenticator resolves callers; required unless every route is public.
	Authenticator Authenticator
	// Auditor records every authorization decision; nil records nothing.
	Auditor Auditor
	// Cursors signs page cursors; required for routes that page.
	Cursors *httpx.Cursors
	Logger  *slog.Logger
	// MaxBodyBytes is the default body limit (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Now is the clock (time.Now).
	Now func() time.Time
	// IdempotencyRetention is how long a committed result is replayed; an
	// older record counts as absent even before pruning deletes it
	// (docs/platform-api.md, "Idempotency"). Zero: DefaultIdempotencyRetention.
	IdempotencyRetention time.Duration
}

// DefaultIdempotencyRetention is how long results stay replayable unless
// configured otherwise: Stripe's 24 hours.
const DefaultIdempotencyRetention = 24 * time.Hour

// API registers platform routes with the shared rules applied: request id
// and wire version headers, authentication, declared capability checks
// (recorded), If-Match and Idempotency-Key syntax, body limits, HEAD for GET,
// compatibility paths, and problem+json for every error. It is safe for
// concurrent use once the routes are registered.
type API struct {
	opts      Options
	idem      *httpx.Idempotency
	log       *slog.Logger
	mu        sync.Mutex
	routes    []*Route
	described []*Route
}

// New returns an API with no routes.
func New(o Options) *API {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.IdempotencyRetention <= 0 {
		o.IdempotencyRetention = DefaultIdempotencyRetention
	}
	a := &API{opts: o, log: o.Logger}
	a.idem = httpx.NewIdempotency(idempotencyTable,
		func() time.Duration { return a.opts.IdempotencyRetention },
		func() time.Time { return a.opts.Now() })
	return a
}

// Handle registers rt on r at its canonical and compatibility paths, and for
// HEAD as well when it is a GET. It panics on a malformed route, which is a
// programming error caught by every test run (as httprouter does).
func (a *API) Handle(r *httprouter.Router, rt Route) {
	if rt.Handler == nil || rt.Method == "" || !strings.HasPrefix(rt.Path, "/") {
		panic(fmt.Sprintf("api: malformed route %s %s", rt.Method, rt.Path))
	}
	if rt.Layout == Versioned && (rt.Path == Prefix || strings.HasPrefix(rt.Path, Prefix+"/")) {
		panic(fmt.Sprintf("api: route %s %s: Versioned paths are relative to %s", rt.Method, rt.Path, Prefix))
	}
	if rt.Capability != "" && !rt.Capability.Valid() {
		panic(fmt.Sprintf("api: route %s %s: unknown capability %q", rt.Method, rt.Path, rt.Capability))
	}
	if rt.Capability != "" && rt.Access == AccessPublic {
		panic(fmt.Sprintf("api: route %s %s: a public route cannot need a capability", rt.Method, rt.Path))
	}
	if rt.Access == AccessPublic && (rt.Idempotency != PolicyNone || rt.Page) {
		panic(fmt.Sprintf("api: route %s %s: public routes have no idempotency keys or pages", rt.Method, rt.Path))
	}
	route := rt
	a.mu.Lock()
	a.routes = append(a.routes, &route)
	a.mu.Unlock()
	for _, p := range route.paths() {
		h := a.serve(&route)
		r.Handle(route.Method, routerPath(p), h)
		if route.Method == http.MethodGet {
			r.Handle(http.MethodHead, routerPath(p), h)
		}
	}
}

// Routes returns the registered routes in registration order.
func (a *API) Routes() []Route {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Route, len(a.routes))
	for i, r := range a.routes {
		out[i] = *r
	}
	return out
}

func (a *API) serve(rt *Route) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		r = ensureRequestID(r)
		h := w.Header()
		h.Set(HeaderRequestID, RequestID(r))
		h.Set(HeaderWireVersion, WireVersion)
		h.Set("Cache-Control", "no-store")
		if r.Method == http.MethodHead {
			w = headWriter{w}
		}
		limit := rt.MaxBody
		if limit <= 0 {
			limit = a.opts.MaxBodyBytes
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		c := &Call{W: w, R: r, Params: ps, api: a, route: rt}
		if err := a.prepare(c); err != nil {
			WriteError(w, r, a.log, err)
			return
		}
		if err := rt.Handler(c); err != nil {
			if c.wrote {
				a.log.Error("platform handler failed after writing its response", "request_id", RequestID(r), "err", err)
				return
			}
			WriteError(w, r, a.log, err)
		}
	}
}

// prepare applies the declared rules in the order a client can rely on:
// 401 (authentication), 404 (malformed scope ids), 403 (declared
// capability), then 422 for malformed Idempotency-Key or If-Match headers.
func (a *API) prepare(c *Call) error {
	rt := c.route
	if rt.Access != AccessPublic {
		if a.opts.Authenticator == nil {
			return &Error{Code: CodeInternal, Message: "internal error", Err: fmt.Errorf("api: no authenticator for %s", rt.Path)}
		}
		// A refused authentication is always recorded; a successful one only
		// when no declared capability check (which names the principal)
		// follows, so every request leaves at least one decision.
		caller, err := a.authenticate(c.R, rt.CanonicalPath(), rt.Access == AccessOwnerOrToken, rt.Capability == "")
		if err != nil {
			return err
		}
		c.Caller = caller
	}
	names := pathParams(rt.Path)
	for _, p := range scopeParams {
		if slices.Contains(names, p) && !auth.IsCanonicalUUID(c.Params.ByName(p)) {
			return NotFound(p)
		}
	}
	if rt.Capability != "" {
		if err := c.Authorize(rt.Capability, c.PathScope()); err != nil {
			return err
		}
	}
	if err := checkQuery(c.R, rt); err != nil {
		return err
	}
	if rt.Idempotency != PolicyNone {
		key, err := parseIdempotencyKey(c.R.Header.Values(HeaderIdempotencyKey))
		if err != nil {
			return err
		}
		if key == "" && rt.Idempotency == PolicyRequired {
			return InvalidParameter(CodeIdempotency, HeaderIdempotencyKey, "the %s header (1 to %d characters) is required", HeaderIdempotencyKey, MaxIdempotencyKeyLen)
		}
		c.idemKey = key
	}
	if rt.IfMatch != PolicyNone {
		vals := c.R.Header.Values("If-Match")
		if len(vals) == 0 {
			if rt.IfMatch == PolicyRequired {
				return InvalidParameter(CodeETag, "If-Match", "the If-Match header with the current revision is required")
			}
		} else {
			rev, err := ParseIfMatch(vals)
			if err != nil {
				return err
			}
			c.ifMatch = rev
		}
	}
	return nil
}

// checkQuery refuses malformed query strings and parameters the route does
// not declare.
func checkQuery(r *http.Request, rt *Route) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return InvalidParameter(CodeValidation, "", "the query string is malformed")
	}
	for name := range vals {
		if !rt.allowsQuery(name) {
			return InvalidParameter(CodeValidation, name, "unknown query parameter %q", name)
		}
	}
	return nil
}

// NotFound returns the handler for requests no route matched. Under the
// platform's paths (Prefix, the compatibility /tenants paths and /admin) a
// request must authenticate first: 401 without a valid token, 404 with one,
// so unknown routes reveal nothing to anonymous callers. Other paths are
// passed to next (the daemon's or another subsystem's handler); a nil next
// answers 404 PF-NOT-FOUND.
func (a *API) NotFound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !platformPath(r.URL.Path) {
			if next != nil && !publicPlatformPath(r.URL.Path) {
				next.ServeHTTP(w, r)
				return
			}
			WithPlatformHeaders(http.HandlerFunc(a.unknownRoute)).ServeHTTP(w, r)
			return
		}
		WithPlatformHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a.opts.Authenticator != nil {
				if _, err := a.authenticate(r, "", true, true); err != nil {
					WriteError(w, r, a.log, err)
					return
				}
			}
			a.unknownRoute(w, r)
		})).ServeHTTP(w, r)
	})
}

// authenticate resolves the caller and records the outcome (a success only
// with recordSuccess).
func (a *API) authenticate(r *http.Request, route string, acceptOwner, recordSuccess bool) (*Caller, error) {
	caller, err := a.opts.Authenticator.Authenticate(r, acceptOwner)
	d := Decision{Action: ActionAuthenticate, Allowed: err == nil, Reason: "authenticated"}
	if caller != nil {
		d.PrincipalID = caller.Principal.ID
		if caller.Owner {
			d.Reason = "owner_token"
		}
	}
	if err != nil {
		d.Reason = reasonOf(err)
		caller = nil
	}
	if err != nil || recordSuccess {
		a.record(r, route, d)
	}
	return caller, err
}

// record completes d with the request's id, method, route and time.
func (a *API) record(r *http.Request, route string, d Decision) {
	if a.opts.Auditor == nil {
		return
	}
	d.At = a.opts.Now()
	d.RequestID = RequestID(r)
	d.Method = r.Method
	if route == "" {
		route = "(unknown route)"
	}
	d.Route = route
	a.opts.Auditor.Record(d)
}

func reasonOf(err error) string {
	e := asError(err)
	if len(e.Diagnostics) > 0 && e.Diagnostics[0].Code != "" {
		return e.Diagnostics[0].Code
	}
	return e.Code
}

func (a *API) unknownRoute(w http.ResponseWriter, r *http.Request) {
	WriteError(w, r, a.log, &Error{Code: CodeNotFound, Message: "no such route"})
}

// publicPlatformPath reports the platform's public paths outside its
// authenticated prefixes (the documentation, when not enabled).
func publicPlatformPath(p string) bool {
	return p == DocsPath || strings.HasPrefix(p, DocsPath+"/")
}

func platformPath(p string) bool {
	for _, prefix := range []string{Prefix + "/", "/tenants/", "/admin/"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return p == Prefix || p == "/tenants" || p == "/admin"
}
