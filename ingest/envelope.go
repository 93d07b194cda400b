package ingest

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/store/broker"
)

// Published envelope
//
// A received webhook is published as one broker message in the CloudEvents
// 1.0 Kafka protocol binding's binary mode: the message value is the
// provider's payload, byte for byte (so a consumer can verify the provider's
// signature over it), and the event's attributes are message headers.
//
//	key                  the event id
//	value                the raw payload, compressed when content-encoding is set
//	ce_specversion       "1.0"
//	ce_id                event id generated on receipt (UUIDv7, time-ordered)
//	ce_source            "/api/v1/webhook/{provider}"
//	ce_type              "dev.agentbridge.webhook.received"
//	ce_time              receipt time, RFC 3339 with nanoseconds, UTC
//	ce_provider          the {provider} path segment
//	ce_datasize          payload size in bytes before compression
//	content-type         the request's Content-Type, parameters included
//	content-encoding     gzip, zstd or lz4 when compressed (absent otherwise)
//	http-<name>          each provider request header, lower-cased, values
//	                     joined with ", "; credentials (Authorization, Cookie,
//	                     X-Api-Key, *-Token, *-Secret, ...: headers.go),
//	                     hop-by-hop and forwarding headers are never copied,
//	                     and User-Agent only through enrichment
//	ce_useragent         User-Agent            } metadata enrichment,
//	ce_sourceip          client address        } present only when
//	ce_requestid         server request id     } metadata-enrichment.enabled
//	ce_method, ce_uri, ce_host  request line   }
//	ce_replay            replay count, set when republished from the DLQ
//	ce_verification      "unverified" on the provider topic: the webhook was
//	                     accepted before any signature check, so anyone who
//	                     can reach the endpoint can put an event there;
//	                     "verified" on the verified topic (below)
//
// Verified topic ({provider topic}{topic.verified-suffix}, default
// "github.verified"): the processor republishes each event whose signature
// verified and whose delivery id was not seen before, after claiming the id,
// with the same key, value and headers except
//
//	ce_type              "dev.agentbridge.webhook.verified"
//	ce_verification      "verified"
//	ce_deliveryid        the provider's delivery id, when it has one
//
// Delivery is at least once: after a crash between the publication and the
// record, the same event (same ce_id) is published again.
//
// Dead-letter messages (topic dlq.topic) carry the same headers as far as
// they are known, plus:
//
//	dlq-id       id of this dead letter (UUIDv7)
//	dlq-stage    ingest (rejected request), publish (publication failed) or
//	             process (a consumer rejected it, e.g. a bad signature)
//	dlq-reason   a stable code, e.g. payload_too_large, signature_mismatch
//	dlq-detail   a human-readable explanation (never a secret)
//	dlq-status   the HTTP status answered (ingest and publish stages)
//	dlq-topic    the topic the event was (or would have been) published to
//	dlq-time     when it was dead-lettered
//	dlq-payload  "omitted" when the value is not the payload (e.g. too large)
//
// In dead letters, signature headers (http-x-hub-signature-256, ...) hold
// "sealed:v1:" and the value sealed with the secret box (headers.go).
const (
	hSpecVersion  = "ce_specversion"
	hID           = "ce_id"
	hSource       = "ce_source"
	hType         = "ce_type"
	hTime         = "ce_time"
	hProvider     = "ce_provider"
	hDataSize     = "ce_datasize"
	hContentType  = "content-type"
	hEncoding     = "content-encoding"
	hUserAgent    = "ce_useragent"
	hSourceIP     = "ce_sourceip"
	hRequestID    = "ce_requestid"
	hMethod       = "ce_method"
	hURI          = "ce_uri"
	hHost         = "ce_host"
	hReplay       = "ce_replay"
	hVerification = "ce_verification"
	hDeliveryID   = "ce_deliveryid"
	hHTTPPrefix   = "http-"

	hDLQID      = "dlq-id"
	hDLQStage   = "dlq-stage"
	hDLQReason  = "dlq-reason"
	hDLQDetail  = "dlq-detail"
	hDLQStatus  = "dlq-status"
	hDLQTopic   = "dlq-topic"
	hDLQTime    = "dlq-time"
	hDLQPayload = "dlq-payload"

	// EventType is the ce_type of every webhook on a provider topic.
	EventType = "dev.agentbridge.webhook.received"
	// VerifiedEventType is the ce_type of every event on a verified topic.
	VerifiedEventType = "dev.agentbridge.webhook.verified"

	// Values of ce_verification.
	Unverified = "unverified"
	Verified   = "verified"
)

// Bounds on enrichment values and forwarded headers, so the envelope's
// overhead over the payload stays under MaxEnvelopeOverhead.
const (
	maxMetaValue       = 1024
	maxForwardedHeader = 32 << 10
	// MaxEnvelopeOverhead is the most the headers add to a payload: the
	// broker's maximum message size must be at least
	// security.max-payload-size + MaxEnvelopeOverhead.
	MaxEnvelopeOverhead = 48 << 10
)

// Envelope is a received webhook: payload, identity and metadata.
type Envelope struct {
	ID          string
	Provider    string
	ReceivedAt  time.Time
	ContentType string
	Encoding    string // Content-Encoding of Payload, "" when not compressed
	Size        int    // payload size before compression
	Payload     []byte
	// Header holds the forwarded provider headers (signatures, delivery ids).
	Header http.Header
	Meta   Metadata
	Replay int
	// Verification is Verified on a verified topic, else Unverified.
	Verification string
	// DeliveryID is the provider's delivery id (verified topic only).
	DeliveryID string
}

// Metadata is the enrichment of a received request.
type Metadata struct {
	UserAgent string `json:"user_agent,omitempty"`
	SourceIP  string `json:"source_ip,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Method    string `json:"method,omitempty"`
	URI       string `json:"uri,omitempty"`
	Host      string `json:"host,omitempty"`
}

// skippedHeaders are never copied into an envelope: credentials would leak
// onto the broker (see headers.go for the full credential rule), hop-by-hop
// headers describe the connection, forwarding headers are client-controlled
// (the source address is enrichment), and Content-Type and User-Agent have
// their own attributes.
var skippedHeaders = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true,
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Content-Length": true, "Content-Type": true, "User-Agent": true, "Host": true,
	"Forwarded": true, "X-Forwarded-For": true, "X-Forwarded-Host": true,
	"X-Forwarded-Proto": true, "X-Forwarded-Port": true, "X-Real-Ip": true,
}

// errHeadersTooLarge reports forwarded headers beyond maxForwardedHeader.
var errHeadersTooLarge = errors.New("request headers are too large to forward")

// clip truncates s to n bytes on a rune boundary and makes it valid UTF-8.
func clip(s string, n int) string {
	if len(s) > n {
		s = s[:n]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// headers renders the envelope's attributes as broker headers.
func (e *Envelope) headers() map[string]string {
	// Room for every attribute (up to 18) and header: a map that grows
	// while being filled allocates twice.
	return e.putHeaders(make(map[string]string, 18+len(e.Header)))
}

// putHeaders adds the envelope's attributes to the empty map h.
func (e *Envelope) putHeaders(h map[string]string) map[string]string {
	h[hSpecVersion] = "1.0"
	h[hID] = e.ID
	h[hSource] = "/api/v1/webhook/" + e.Provider
	h[hType] = EventType
	h[hVerification] = Unverified
	if e.Verification == Verified {
		h[hType] = VerifiedEventType
		h[hVerification] = Verified
	}
	if e.DeliveryID != "" {
		h[hDeliveryID] = e.DeliveryID
	}
	h[hTime] = e.ReceivedAt.UTC().Format(time.RFC3339Nano)
	h[hProvider] = e.Provider
	h[hDataSize] = strconv.Itoa(e.Size)
	if e.ContentType != "" {
		h[hContentType] = e.ContentType
	}
	if e.Encoding != "" {
		h[hEncoding] = e.Encoding
	}
	set := func(k, v string) {
		if v != "" {
			h[k] = v
		}
	}
	set(hUserAgent, e.Meta.UserAgent)
	set(hSourceIP, e.Meta.SourceIP)
	set(hRequestID, e.Meta.RequestID)
	set(hMethod, e.Meta.Method)
	set(hURI, e.Meta.URI)
	set(hHost, e.Meta.Host)
	if e.Replay > 0 {
		h[hReplay] = strconv.Itoa(e.Replay)
	}
	for k, vs := range e.Header {
		h[hHTTPPrefix+strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	return h
}

// Message is the envelope as a broker message for topic.
func (e *Envelope) Message(topic string) broker.Message {
	return broker.Message{Topic: topic, Key: e.ID, Headers: e.headers(), Value: e.Payload}
}

// ErrNotEnvelope reports a message that was not published by this service.
var ErrNotEnvelope = errors.New("ingest: message is not a webhook envelope")

// ParseEnvelope reads an envelope back from a broker message. The payload
// stays as published (see Encoding).
func ParseEnvelope(m broker.Message) (*Envelope, error) {
	h := m.Headers
	if h[hSpecVersion] != "1.0" || (h[hType] != EventType && h[hType] != VerifiedEventType) || h[hID] == "" || h[hProvider] == "" {
		return nil, fmt.Errorf("%w (topic %s, offset %d)", ErrNotEnvelope, m.Topic, m.Offset)
	}
	e := &Envelope{
		ID:          h[hID],
		Provider:    h[hProvider],
		ContentType: h[hContentType],
		Encoding:    h[hEncoding],
		Payload:     m.Value,
		Header:      http.Header{},
		// What the message says: only the processor publishes verified
		// events, on the verified topic (topicFor keeps providers out of it).
		Verification: Unverified,
		DeliveryID:   h[hDeliveryID],
		Meta: Metadata{
			UserAgent: h[hUserAgent], SourceIP: h[hSourceIP], RequestID: h[hRequestID],
			Method: h[hMethod], URI: h[hURI], Host: h[hHost],
		},
	}
	var err error
	if e.ReceivedAt, err = time.Parse(time.RFC3339Nano, h[hTime]); err != nil {
		return nil, fmt.Errorf("%w: bad %s", ErrNotEnvelope, hTime)
	}
	if e.Size, err = strconv.Atoi(h[hDataSize]); err != nil || e.Size < 0 {
		return nil, fmt.Errorf("%w: bad %s", ErrNotEnvelope, hDataSize)
	}
	if r := h[hReplay]; r != "" {
		e.Replay, _ = strconv.Atoi(r)
	}
	if h[hType] == VerifiedEventType && h[hVerification] == Verified {
		e.Verification = Verified
	}
	for k, v := range h {
		if name, ok := strings.CutPrefix(k, hHTTPPrefix); ok && name != "" {
			e.Header.Set(name, v)
		}
	}
	return e, nil
}
