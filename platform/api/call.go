package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/platform/auth"
)

// Call is one request to a registered route: the request, its parameters,
// the authenticated caller and the helpers that apply the shared rules.
type Call struct {
	W      http.ResponseWriter
	R      *http.Request
	Params httprouter.Params
	// Caller is nil on public routes.
	Caller *Caller

	api     *API
	route   *Route
	body    []byte
	read    bool
	idemKey string
	ifMatch int64
	wrote   bool
}

// Context is the request's context.
func (c *Call) Context() context.Context { return c.R.Context() }

// RequestID is the server-generated request id.
func (c *Call) RequestID() string { return RequestID(c.R) }

// Route is the route being served.
func (c *Call) Route() *Route { return c.route }

// PathScope is the scope named by the {tenant}, {project} and {environment}
// path parameters (validated as canonical UUIDs before the handler runs).
func (c *Call) PathScope() auth.Scope {
	return auth.Scope{
		Tenant:      c.Params.ByName("tenant"),
		Project:     c.Params.ByName("project"),
		Environment: c.Params.ByName("environment"),
	}
}

// UUIDParam returns the path parameter name when it is a canonical UUID and
// 404 PF-NOT-FOUND (for what) otherwise.
func (c *Call) UUIDParam(name, what string) (string, error) {
	v := c.Params.ByName(name)
	if !auth.IsCanonicalUUID(v) {
		return "", NotFound(what)
	}
	return v, nil
}

// IfMatch returns the revision of a valid If-Match header, or 0 when the
// route declared it optional and none was sent.
func (c *Call) IfMatch() int64 { return c.ifMatch }

// IdempotencyKey returns the request's valid Idempotency-Key, or "".
func (c *Call) IdempotencyKey() string { return c.idemKey }

// Body reads the whole request body once, within the route's limit (413).
func (c *Call) Body() ([]byte, error) {
	if c.read {
		return c.body, nil
	}
	c.read = true
	data, err := io.ReadAll(c.R.Body)
	if err != nil {
		return nil, asError(err)
	}
	c.body = data
	return data, nil
}

// Decode reads the body and decodes it strictly into dst (httpx.DecodeBytes
// with the platform's bodyRules): 413 PF-REQUEST-TOO-LARGE over the limit,
// 422 PF-VALIDATION with the JSON Pointer of each offending field
// otherwise (bodyError).
func (c *Call) Decode(dst any) error {
	if err := httpx.CheckMediaType(c.R, bodyRules); err != nil {
		return err
	}
	data, err := c.Body()
	if err != nil {
		return err
	}
	return DecodeBytes(data, dst)
}

// DecodeOptional is Decode that accepts an empty body (dst is left as is),
// whatever its Content-Type.
func (c *Call) DecodeOptional(dst any) error {
	data, err := c.Body()
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := httpx.CheckMediaType(c.R, bodyRules); err != nil {
		return err
	}
	return DecodeBytes(data, dst)
}

// Authorize checks capability at scope for the caller, records the decision
// with the request id and answers 403 PF-FORBIDDEN when it is denied.
func (c *Call) Authorize(capability auth.Capability, scope auth.Scope) error {
	if c.Caller == nil {
		return Unauthenticated("")
	}
	d := auth.Authorize(c.Caller.Grants, c.Caller.Principal, capability, scope)
	c.Record(Decision{Action: ActionAuthorize, Capability: capability, Scope: scope, Allowed: d.Allowed, Reason: d.Reason, GrantID: d.GrantID})
	if !d.Allowed {
		return Forbidden("the caller holds no current grant with %s in this scope", capability)
	}
	return nil
}

// Record hands d to the auditor with the request's id, route, method,
// caller and time filled in.
func (c *Call) Record(d Decision) {
	if d.PrincipalID == "" && c.Caller != nil {
		d.PrincipalID = c.Caller.Principal.ID
	}
	c.api.record(c.R, c.route.CanonicalPath(), d)
}

// JSON writes v with status as application/json.
func (c *Call) JSON(status int, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.writeRaw(status, data, nil)
	return nil
}

// OK writes v with the route's success status.
func (c *Call) OK(v any) error { return c.JSON(c.route.successStatus(), v) }

// Respond writes a Result (status, ETag, Location and body).
func (c *Call) Respond(res *Result) error {
	data, err := json.Marshal(res.Body)
	if err != nil {
		return err
	}
	c.writeRaw(res.status(c.route), data, res.headers())
	return nil
}

func (c *Call) writeRaw(status int, body []byte, hdr map[string]string) {
	h := c.W.Header()
	for k, v := range hdr {
		h.Set(k, v)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	c.W.WriteHeader(status)
	c.wrote = true
	_, _ = c.W.Write(body)
	_, _ = c.W.Write([]byte{'\n'})
}

// Result is the outcome of a change: what Commit stores with an
// idempotency key and writes (or replays).
type Result struct {
	// Status defaults to the route's success status.
	Status int
	Body   any
	// Revision, when positive, is sent as a quoted ETag.
	Revision int64
	// Location is sent as the Location header when set.
	Location string
}

func (r *Result) status(rt *Route) int {
	if r.Status != 0 {
		return r.Status
	}
	return rt.successStatus()
}

func (r *Result) headers() map[string]string {
	h := map[string]string{}
	if r.Revision > 0 {
		h["ETag"] = FormatETag(r.Revision)
	}
	if r.Location != "" {
		h["Location"] = r.Location
	}
	return h
}

// Raw writes an already encoded JSON body with status.
func (c *Call) Raw(status int, body []byte) error {
	c.writeRaw(status, body, nil)
	return nil
}
