package callbacks

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/agentbridge/bridge/store/broker"
)

// Event is what the dispatcher delivers: an id, a type and a JSON payload.
type Event struct {
	ID      string          // UUID
	Type    string          // matched against subscribedEventTypes
	Topic   string          // where it was consumed ("" for Dispatch)
	Payload json.RawMessage // the request body
}

// eventIDNamespace derives UUIDs for messages whose id is not a UUID.
var eventIDNamespace = uuid.MustParse("6f0e4b8e-2f7c-4b8a-9d51-3c1f0c0b7a11")

// providerTypeHeaders are the provider headers, as forwarded by webhook
// ingestion ("http-" + lower-case name), that name a webhook's event type.
var providerTypeHeaders = []string{
	"http-x-github-event",  // GitHub, Gitea-compatible
	"http-x-gitlab-event",  // GitLab
	"http-x-gitea-event",   // Gitea
	"http-x-shopify-topic", // Shopify
	"http-x-event-key",     // Bitbucket
	"http-x-event-type",    // generic
}

// maxDecodedPayload bounds a decompressed payload (a compression bomb is
// skipped, not expanded).
const maxDecodedPayload = 16 << 20

// parseEvent reads a consumed broker message. What is accepted (README.md,
// "Consumed events"):
//
//   - type: the "event-type" header; for a webhook published by ingestion
//     (it has a "ce_provider" header) the provider's event header
//     (providerTypeHeaders), else the payload's "type", "event_type" or
//     "eventType", else "ce_type"; for other messages "ce_type" (CloudEvents),
//     else the payload's fields;
//   - id: the "event-id" header, else "ce_id", else the payload's "id",
//     "event_id" or "eventId". A UUID is used as is, any other string is
//     mapped to a UUIDv5 of it, and a message without one gets a UUIDv5 of
//     its topic and offset, so a redelivered message keeps its id;
//   - payload: the message value (decompressed per "content-encoding": gzip,
//     zstd or lz4), delivered verbatim when it is JSON and as a JSON string
//     otherwise.
//
// ok is false for dead letters ("dlq-id" header), undecodable values and
// messages without a usable type; they are acknowledged and skipped.
func parseEvent(m broker.Message) (ev Event, ok bool) {
	ev.Topic = m.Topic
	if m.Headers["dlq-id"] != "" {
		return ev, false
	}
	value, err := decodeValue(m.Headers["content-encoding"], m.Value)
	if err != nil {
		return ev, false
	}
	isJSON := json.Valid(value)
	var env map[string]json.RawMessage
	if isJSON {
		trimmed := bytes.TrimSpace(value)
		if len(trimmed) > 0 && trimmed[0] == '{' {
			_ = json.Unmarshal(trimmed, &env)
		}
	}
	ev.Type = eventType(m.Headers, env)
	if ev.Type == "" || checkEventType(ev.Type) != "" || strings.HasSuffix(ev.Type, "*") {
		return ev, false
	}
	rawID := firstNonEmpty(strings.TrimSpace(m.Headers["event-id"]), strings.TrimSpace(m.Headers["ce_id"]))
	if rawID == "" {
		rawID = envString(env, "id", "event_id", "eventId")
	}
	ev.ID = eventUUID(rawID, m.Topic, m.Offset)
	if isJSON {
		ev.Payload = json.RawMessage(bytes.TrimSpace(value))
	} else {
		data, _ := json.Marshal(string(value))
		ev.Payload = data
	}
	return ev, true
}

func eventType(h map[string]string, env map[string]json.RawMessage) string {
	if t := strings.TrimSpace(h["event-type"]); t != "" {
		return t
	}
	ceType := strings.TrimSpace(h["ce_type"])
	if h["ce_provider"] != "" {
		// Ingestion's ce_type is the same for every webhook; the provider's
		// own type is what configurations subscribe to.
		for _, name := range providerTypeHeaders {
			if t := strings.TrimSpace(h[name]); t != "" {
				return t
			}
		}
		return firstNonEmpty(envString(env, "type", "event_type", "eventType"), ceType)
	}
	return firstNonEmpty(ceType, envString(env, "event_type", "eventType", "type"))
}

// decodeValue undoes a message's content-encoding.
func decodeValue(encoding string, v []byte) ([]byte, error) {
	var r io.Reader
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
		return v, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(v))
		if err != nil {
			return nil, err
		}
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(v), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecodedPayload*2))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	case "lz4":
		r = lz4.NewReader(bytes.NewReader(v))
	default:
		return nil, fmt.Errorf("unknown content-encoding %q", encoding)
	}
	out, err := io.ReadAll(io.LimitReader(r, maxDecodedPayload+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxDecodedPayload {
		return nil, errors.New("decoded payload too large")
	}
	return out, nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func envString(env map[string]json.RawMessage, keys ...string) string {
	for _, k := range keys {
		raw, ok := env[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

func eventUUID(raw, topic string, offset int64) string {
	if raw != "" {
		if id, err := uuid.Parse(raw); err == nil && len(raw) == 36 {
			return id.String()
		}
		return uuid.NewSHA1(eventIDNamespace, []byte("id:"+raw)).String()
	}
	return uuid.NewSHA1(eventIDNamespace, []byte("offset:"+topic+":"+strconv.FormatInt(offset, 10))).String()
}
