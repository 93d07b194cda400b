package trigger

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// Webhook trigger limits (docs/platform-api.md, "Webhook triggers").
const (
	// MaxWebhookBody bounds a delivery's body (the provider ingress limit).
	MaxWebhookBody = 1 << 20
	// DefaultTolerance is how far a webhook-timestamp may be from the
	// server's clock, either way (the Standard Webhooks default).
	DefaultTolerance = 5 * time.Minute
	MaxTolerance     = time.Hour
	MaxMappingLen    = 4096
	MaxHeaders       = 20
	MaxNameLen       = 200
	MaxWebhookIDLen  = 255
	secretPrefix     = "whsec_"
	secretBytes      = 32
)

// The Standard Webhooks headers.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// Trigger statuses: a trigger is enabled until it is disabled or replaced,
// for good.
const (
	TriggerEnabled  = "enabled"
	TriggerDisabled = "disabled"
)

// TriggerRequest is the body of POST E/triggers and of
// POST E/triggers/{id}/replace.
type TriggerRequest struct {
	Name         string   `json:"name,omitempty" doc:"display name, at most 200 characters"`
	ActivationID string   `json:"activation_id" api:"required" format:"uuid" doc:"an active activation of the environment"`
	Mapping      string   `json:"mapping,omitempty" doc:"workflow expression (CEL) over input.body (the parsed JSON body) and input.headers (the chosen headers, lower-case names) that gives the run input, a JSON object; default: the body itself. At most 4096 characters"`
	Headers      []string `json:"headers,omitempty" doc:"request headers the mapping may read (at most 20 names; the webhook-* headers are never offered)"`
	Tolerance    int      `json:"tolerance_seconds,omitempty" doc:"how far webhook-timestamp may be from the server's clock, 1..3600 seconds (default 300)"`
}

// Trigger is a trigger as the routes show it; the signing secret is never
// part of it (CreatedTrigger shows it once).
type Trigger struct {
	ID           string     `json:"id" format:"uuid"`
	Revision     int64      `json:"revision" doc:"1 while enabled, 2 once disabled or replaced"`
	Status       string     `json:"status" enum:"enabled,disabled"`
	Name         string     `json:"name"`
	ActivationID string     `json:"activation_id" format:"uuid"`
	Mapping      string     `json:"mapping" doc:"the mapping expression (\"\": the body is the input)"`
	Headers      []string   `json:"headers"`
	Tolerance    int        `json:"tolerance_seconds"`
	URL          string     `json:"url" doc:"the path to deliver to: /webhooks/{id} on the services listener"`
	PrincipalID  string     `json:"principal_id" format:"uuid" doc:"who created it: the runs are started as this principal"`
	Replaces     *string    `json:"replaces" format:"uuid"`
	ReplacedBy   *string    `json:"replaced_by" format:"uuid"`
	CreatedAt    time.Time  `json:"created_at"`
	DisabledAt   *time.Time `json:"disabled_at"`
	DisabledBy   *string    `json:"disabled_by" format:"uuid"`
}

// CreatedTrigger is the answer of a creation or replacement: the trigger
// and its signing secret, shown this once.
type CreatedTrigger struct {
	Trigger
	Secret string `json:"secret" writeOnly:"true" doc:"the whsec_ signing secret (Standard Webhooks), shown only in this answer"`
}

// Delivery is the answer to an accepted webhook: the run it started (or
// had started, for a replayed webhook-id).
type Delivery struct {
	TriggerID string `json:"trigger_id" format:"uuid"`
	WebhookID string `json:"webhook_id"`
	RunID     string `json:"run_id" format:"uuid"`
	Replayed  bool   `json:"replayed" doc:"true when this webhook-id was accepted before: no second run started"`
}

// triggerRow is a stored trigger with its scope and sealed secret.
type triggerRow struct {
	Trigger
	Tenant, Project, Environment string
	sealed                       string
}

// checkTrigger applies the TriggerRequest rules that need no stored state
// and normalizes it (lower-case header names, default tolerance).
func checkTrigger(req *TriggerRequest) error {
	if utf8.RuneCountInString(req.Name) > MaxNameLen {
		return api.Invalid("/name", "name has at most %d characters", MaxNameLen)
	}
	if !auth.IsCanonicalUUID(req.ActivationID) {
		return api.Invalid("/activation_id", "activation_id must be a canonical lowercase UUID")
	}
	if len(req.Mapping) > MaxMappingLen {
		return api.Invalid("/mapping", "mapping has at most %d characters", MaxMappingLen)
	}
	req.Mapping = strings.TrimPrefix(strings.TrimSpace(req.Mapping), "=")
	if len(req.Headers) > MaxHeaders {
		return api.Invalid("/headers", "at most %d headers", MaxHeaders)
	}
	seen := map[string]bool{}
	for i, h := range req.Headers {
		name := strings.ToLower(h)
		path := "/headers/" + strconv.Itoa(i)
		if name == "" || len(name) > 100 || strings.IndexFunc(name, func(r rune) bool {
			return !(r == '-' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'))
		}) >= 0 {
			return api.Invalid(path, "a header name has 1 to 100 letters, digits and dashes")
		}
		if strings.HasPrefix(name, "webhook-") || name == "authorization" || name == "cookie" {
			return api.Invalid(path, "the %s header is never offered to the mapping", name)
		}
		if seen[name] {
			return api.Invalid(path, "%s is listed twice", name)
		}
		seen[name] = true
		req.Headers[i] = name
	}
	if req.Headers == nil {
		req.Headers = []string{}
	}
	switch {
	case req.Tolerance == 0:
		req.Tolerance = int(DefaultTolerance / time.Second)
	case req.Tolerance < 1 || req.Tolerance > int(MaxTolerance/time.Second):
		return api.Invalid("/tolerance_seconds", "tolerance_seconds is from 1 to %d", int(MaxTolerance/time.Second))
	}
	return nil
}

// newSecret makes a whsec_ signing secret: 32 random bytes in base64.
func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("trigger: secret: %w", err)
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// secretKey is the HMAC key of a whsec_ secret.
func secretKey(secret string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
}

// signature is the Standard Webhooks v1 signature of a delivery:
// base64(HMAC-SHA256(key, id "." timestamp "." body)).
func signature(key []byte, id, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Sign answers the webhook-signature header value of a delivery signed
// with secret (one v1 signature), as a Standard Webhooks sender makes it.
func Sign(secret, id string, at time.Time, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", fmt.Errorf("trigger: the secret is not whsec_ base64: %w", err)
	}
	return "v1," + signature(key, id, strconv.FormatInt(at.Unix(), 10), body), nil
}

// signatureError is 401 PF-UNAUTHENTICATED for a delivery whose signature
// headers do not verify; kind names why (a stable diagnostic code).
func signatureError(kind, format string, args ...any) *api.Error {
	msg := fmt.Sprintf(format, args...)
	return &api.Error{Code: api.CodeUnauthenticated,
		Message:     "the delivery is not signed by this trigger's secret (Standard Webhooks): " + msg,
		Diagnostics: []api.Diagnostic{{Code: kind, Message: msg}},
		Headers:     map[string]string{"WWW-Authenticate": `Standard-Webhooks realm="webhooks"`}}
}

// verify checks a delivery's Standard Webhooks headers against key at now:
// exactly one webhook-id (1..255 printable characters), webhook-timestamp
// (Unix seconds within tolerance of now) and webhook-signature (space
// separated "v1,<base64>" entries, any of which may match: a sender
// rotating its secret sends several). It answers the webhook-id.
func verify(h http.Header, body []byte, key []byte, now time.Time, tolerance time.Duration) (string, error) {
	one := func(name string) (string, error) {
		vs := h.Values(name)
		switch {
		case len(vs) == 0 || vs[0] == "":
			return "", signatureError("missing_"+strings.ReplaceAll(strings.TrimPrefix(name, "webhook-"), "-", "_"), "the %s header is required", name)
		case len(vs) > 1:
			return "", signatureError("repeated_header", "send exactly one %s header", name)
		}
		return vs[0], nil
	}
	id, err := one(HeaderWebhookID)
	if err != nil {
		return "", err
	}
	if len(id) > MaxWebhookIDLen || strings.IndexFunc(id, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return "", signatureError("bad_id", "webhook-id has 1 to %d printable characters", MaxWebhookIDLen)
	}
	ts, err := one(HeaderWebhookTimestamp)
	if err != nil {
		return "", err
	}
	sec, perr := strconv.ParseInt(ts, 10, 64)
	if perr != nil || len(ts) > 12 || ts[0] == '+' || ts[0] == '-' {
		return "", signatureError("bad_timestamp", "webhook-timestamp is whole Unix seconds")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return "", signatureError("timestamp_out_of_tolerance", "webhook-timestamp is %s from the server's clock; at most %s is accepted", d.Round(time.Second).Abs(), tolerance)
	}
	sigs, err := one(HeaderWebhookSignature)
	if err != nil {
		return "", err
	}
	want := []byte(signature(key, id, ts, body))
	for _, s := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if ok && version == "v1" && hmac.Equal([]byte(sig), want) {
			return id, nil
		}
	}
	return "", signatureError("bad_signature", "no v1 signature matches the body, webhook-id and webhook-timestamp")
}

// webhookPath is the delivery path of a trigger.
func webhookPath(id string) string { return "/webhooks/" + id }

// NewSecret makes a whsec_ signing secret (Standard Webhooks) and answers
// it with its HMAC key: test listen routes (package platform/steptest)
// sign with the same scheme as triggers.
func NewSecret() (string, []byte, error) {
	secret, err := newSecret()
	if err != nil {
		return "", nil, err
	}
	key, err := secretKey(secret)
	return secret, key, err
}

// Verify checks a delivery's Standard Webhooks headers against key at now
// within tolerance, as POST /webhooks/{id} does, and answers the
// webhook-id; a refusal is the same 401 problem.
func Verify(h http.Header, body, key []byte, now time.Time, tolerance time.Duration) (string, error) {
	return verify(h, body, key, now, tolerance)
}
