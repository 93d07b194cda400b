// Package provider holds the built-in, versioned provider packages of
// provider sources (docs/platform-api.md, "Provider packages"): for each
// messaging provider, how its ingress is authenticated and challenged, the
// event kinds it normalizes deliveries into, the JSON schema of each
// normalized event, and which kinds a source may dispatch. Signatures are
// checked by ingest/verify, shared with the webhook ingestion service.
package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentbridge/bridge/ingest/verify"
	"github.com/agentbridge/bridge/platform/lang"
)

// Limits of one delivery (docs/platform-api.md, "Limits": provider ingress body / batch).
const (
	MaxBody    = 1 << 20
	MaxEvents  = 100
	MaxEventID = 200
	MaxAccount = 200
	AccountKey = "account_id"
)

// Inbound is one request to /provider-ingress/{identifier}.
type Inbound struct {
	Header http.Header
	Query  url.Values
	Body   []byte
	Now    time.Time
}

// Reply is a challenge answer written to the provider as is.
type Reply struct {
	ContentType string
	Body        []byte
}

// Event is one normalized event of a delivery. Its identity in a source
// is (kind, ID).
type Event struct {
	Kind string
	// ID is the provider's id of the event (stable across its retries).
	ID string
	// AccountID is the provider account the event belongs to ("" when the
	// provider names none); a source pinning account_id refuses others.
	AccountID string
	// Payload is the normalized event, valid for the kind's schema.
	Payload json.RawMessage
}

// Errors of Parse and Challenge.
var (
	// ErrAuth: the request is not authenticated by the provider's scheme
	// (401). Wrapped with a safe reason.
	ErrAuth = errors.New("provider authentication failed")
	// ErrPayload: the delivery is not one the package understands, or an
	// event does not fit its schema (422 PF-PROVIDER-PAYLOAD).
	ErrPayload = errors.New("provider payload refused")
	// ErrTooMany: the delivery holds more than MaxEvents events (413).
	ErrTooMany = errors.New("too many events in one delivery")
	// ErrNoChallenge: the package answers no GET challenge (405 is not
	// ours to give: 404 like an unknown route).
	ErrNoChallenge = errors.New("the package has no GET challenge")
)

// AuthError is ErrAuth with a safe reason code from ingest/verify.
type AuthError struct{ Reason, Detail string }

func (e *AuthError) Error() string {
	return "provider authentication failed: " + e.Reason + ": " + e.Detail
}
func (e *AuthError) Unwrap() error { return ErrAuth }

// PayloadError is ErrPayload with a JSON Pointer into the normalized event
// or the body and a message (no payload values).
type PayloadError struct{ Code, Path, Msg string }

func (e *PayloadError) Error() string { return "provider payload refused: " + e.Msg }
func (e *PayloadError) Unwrap() error { return ErrPayload }

func payloadErr(path, format string, args ...any) error {
	return &PayloadError{Code: "payload", Path: path, Msg: fmt.Sprintf(format, args...)}
}

func authErr(err error) error {
	var ve *verify.Error
	if errors.As(err, &ve) {
		return &AuthError{Reason: ve.Reason, Detail: ve.Detail}
	}
	return &AuthError{Reason: "error", Detail: "the request could not be authenticated"}
}

// Package is one built-in provider package declaration.
type Package struct {
	Provider       string                     `json:"provider"`
	Name           string                     `json:"package"`
	Version        string                     `json:"package_version"`
	AdapterVersion string                     `json:"adapter_version"`
	Title          string                     `json:"title"`
	ConfigKeys     []string                   `json:"config_keys" doc:"keys a connection's config may hold; account_id pins the provider account"`
	SecretKeys     []string                   `json:"secret_keys" doc:"secrets a connection must hold (sealed, never shown)"`
	EventKinds     []string                   `json:"event_kinds"`
	EventSchemas   map[string]json.RawMessage `json:"event_schemas" doc:"JSON schema of each kind's normalized event"`
	Dispatchable   []string                   `json:"dispatchable" doc:"kinds a source may dispatch; the others are only ignored"`
	SchemaDigest   string                     `json:"schema_digest" doc:"lowercase hex SHA-256 of the canonical JSON of event_schemas followed by the canonical JSON of the sorted dispatchable kinds"`
	AuthDoc        string                     `json:"authentication"`
	ChallengeDoc   string                     `json:"challenge"`

	verifier func(secrets map[string]string) (verify.Verifier, error)
	parse    func(in Inbound) (*Reply, []Event, error)
	get      func(in Inbound, secrets map[string]string) (*Reply, error)
	schemas  map[string]*jsonschema.Schema
}

// Dispatches reports whether kind may be dispatched.
func (p *Package) Dispatches(kind string) bool { return slices.Contains(p.Dispatchable, kind) }

// Key names the declaration: provider, package, versions.
func (p *Package) Key() string {
	return p.Provider + "/" + p.Name + "@" + p.Version + "#" + p.AdapterVersion
}

// Receive authenticates a POST delivery with the connection's secrets and
// normalizes it: a challenge answer (in-band challenges such as Slack's
// url_verification, answered only once authenticated) or the events. The
// events are checked against their schemas; an event of an unknown kind
// is the package's explicit "unsupported" kind.
func (p *Package) Receive(in Inbound, secrets map[string]string) (*Reply, []Event, error) {
	v, err := p.verifier(secrets)
	if err != nil {
		return nil, nil, fmt.Errorf("provider %s: verifier: %w", p.Key(), err)
	}
	if err := v.Verify(verify.Request{Header: in.Header, Body: in.Body, Now: in.Now}); err != nil {
		return nil, nil, authErr(err)
	}
	reply, events, err := p.parse(in)
	if err != nil || reply != nil {
		return reply, nil, err
	}
	if len(events) > MaxEvents {
		return nil, nil, fmt.Errorf("%w: %d events, at most %d", ErrTooMany, len(events), MaxEvents)
	}
	for i, e := range events {
		if err := p.check(e); err != nil {
			var pe *PayloadError
			if errors.As(err, &pe) {
				pe.Path = fmt.Sprintf("/events/%d%s", i, pe.Path)
			}
			return nil, nil, err
		}
	}
	return nil, events, nil
}

// Challenge answers a GET verification request (WhatsApp's hub.challenge).
func (p *Package) Challenge(in Inbound, secrets map[string]string) (*Reply, error) {
	if p.get == nil {
		return nil, ErrNoChallenge
	}
	return p.get(in, secrets)
}

// check validates a normalized event against its kind's schema.
func (p *Package) check(e Event) error {
	sch, ok := p.schemas[e.Kind]
	if !ok {
		return payloadErr("", "event kind %s is not declared by %s", e.Kind, p.Name)
	}
	if e.ID == "" || len(e.ID) > MaxEventID || strings.IndexFunc(e.ID, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return payloadErr("", "the %s event has no provider event id of 1 to %d printable characters", e.Kind, MaxEventID)
	}
	if len(e.AccountID) > MaxAccount {
		return payloadErr("", "the account id has more than %d characters", MaxAccount)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(e.Payload))
	if err != nil {
		return payloadErr("", "the normalized %s event is not JSON", e.Kind)
	}
	if err := sch.Validate(v); err != nil {
		msg := "the normalized event does not match its schema"
		path := ""
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			for len(ve.Causes) > 0 {
				ve = ve.Causes[0]
			}
			path = "/" + strings.Join(ve.InstanceLocation, "/")
			if path == "/" {
				path = ""
			}
			msg = fmt.Sprintf("the normalized %s event does not match its schema at %q", e.Kind, path)
		}
		return &PayloadError{Code: "schema", Path: path, Msg: msg}
	}
	return nil
}

// Digest computes a package's schema_digest (see Package.SchemaDigest).
func Digest(schemas map[string]json.RawMessage, dispatchable []string) (string, error) {
	all, err := json.Marshal(schemas)
	if err != nil {
		return "", err
	}
	a, err := lang.CanonicalJSON(all)
	if err != nil {
		return "", err
	}
	kinds := slices.Clone(dispatchable)
	sort.Strings(kinds)
	kb, err := json.Marshal(kinds)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(a)
	h.Write(kb)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// finish compiles the schemas and computes the digest of a declaration.
func (p *Package) finish() *Package {
	p.schemas = map[string]*jsonschema.Schema{}
	p.EventKinds = p.EventKinds[:0]
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	for kind, raw := range p.EventSchemas {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			panic(fmt.Sprintf("provider %s: schema of %s: %v", p.Name, kind, err)) // built-in declaration
		}
		url := "mem://provider/" + p.Name + "/" + kind + ".json"
		if err := c.AddResource(url, doc); err != nil {
			panic(fmt.Sprintf("provider %s: schema of %s: %v", p.Name, kind, err))
		}
		if p.schemas[kind], err = c.Compile(url); err != nil {
			panic(fmt.Sprintf("provider %s: schema of %s: %v", p.Name, kind, err))
		}
		p.EventKinds = append(p.EventKinds, kind)
	}
	sort.Strings(p.EventKinds)
	sort.Strings(p.Dispatchable)
	d, err := Digest(p.EventSchemas, p.Dispatchable)
	if err != nil {
		panic(fmt.Sprintf("provider %s: digest: %v", p.Name, err))
	}
	p.SchemaDigest = d
	return p
}

// Registry is the set of built-in declarations.
type Registry struct{ all []*Package }

// Builtin answers the built-in packages: Slack Events API, WhatsApp Cloud
// API, Telegram Bot API and GitHub webhooks.
func Builtin() *Registry {
	return &Registry{all: []*Package{slack(), whatsapp(), telegram(), github()}}
}

// All lists the declarations sorted by key.
func (r *Registry) All() []*Package {
	out := slices.Clone(r.all)
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Providers lists the provider ids.
func (r *Registry) Providers() []string {
	var out []string
	for _, p := range r.all {
		if !slices.Contains(out, p.Provider) {
			out = append(out, p.Provider)
		}
	}
	sort.Strings(out)
	return out
}

// ForProvider answers one declaration of provider (its config and secret
// keys are the same in every declaration), or nil.
func (r *Registry) ForProvider(provider string) *Package {
	for _, p := range r.All() {
		if p.Provider == provider {
			return p
		}
	}
	return nil
}

// Find answers the declarations matching provider, package and version,
// and adapter version unless it is "".
func (r *Registry) Find(provider, name, version, adapter string) []*Package {
	var out []*Package
	for _, p := range r.All() {
		if p.Provider == provider && p.Name == name && p.Version == version && (adapter == "" || p.AdapterVersion == adapter) {
			out = append(out, p)
		}
	}
	return out
}

// Exact answers the declaration with that key, or nil.
func (r *Registry) Exact(provider, name, version, adapter string) *Package {
	if f := r.Find(provider, name, version, adapter); len(f) == 1 && adapter != "" {
		return f[0]
	}
	return nil
}

// helpers shared by the packages

// obj decodes a delivery body as a JSON object.
func obj(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, payloadErr("", "the body is not a JSON object")
	}
	if dec.More() {
		return nil, payloadErr("", "the body has data after its JSON object")
	}
	return m, nil
}

// at answers the value at keys of m (nil when absent).
func at(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// str answers the string at keys of m ("" when absent or not a string).
func str(m map[string]any, keys ...string) string {
	s, _ := at(m, keys...).(string)
	return s
}

// num answers the number at keys of m as its JSON text ("" when absent).
func num(m map[string]any, keys ...string) string {
	n, _ := at(m, keys...).(json.Number)
	return string(n)
}

// encode marshals a normalized event; optional values that are absent
// ("") are left out, so that the schema's types hold.
func encode(m map[string]any, optional ...string) json.RawMessage {
	for _, k := range optional {
		if m[k] == "" {
			delete(m, k)
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// schema builds an object schema: required and optional properties with
// their JSON types; no other property is allowed.
func schema(required map[string]string, optional map[string]string) json.RawMessage {
	props := map[string]any{}
	req := []string{}
	for k, t := range required {
		props[k] = map[string]any{"type": t}
		req = append(req, k)
	}
	for k, t := range optional {
		props[k] = map[string]any{"type": t}
	}
	sort.Strings(req)
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false})
	return b
}
