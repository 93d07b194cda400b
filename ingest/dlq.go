package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
)

// Dead-letter stages.
const (
	StageIngest  = "ingest"  // the request was rejected
	StagePublish = "publish" // publication failed after its retries
	StageProcess = "process" // a consumer rejected the event
)

// deadLetter is one event to dead-letter.
type deadLetter struct {
	headers map[string]string // envelope headers, as far as known
	payload []byte            // nil with omitted when not kept
	omitted bool
	stage   string
	reason  string
	detail  string
	status  int
	topic   string
}

// sendDeadLetter publishes dl to the dead-letter topic with the default
// retry policy. A payload the broker refuses as too large is dropped from
// the dead letter, so the reason is recorded even then.
func (s *Service) sendDeadLetter(ctx context.Context, dl deadLetter) error {
	if !s.cfg.DLQ.Enabled {
		s.log.Warn("webhook dead letter (DLQ disabled)", "event_id", dl.headers[hID], "provider", dl.headers[hProvider], "stage", dl.stage, "reason", dl.reason)
		return nil
	}
	h := maps.Clone(dl.headers)
	if h == nil {
		h = map[string]string{}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("ingest: dead letter id: %w", err)
	}
	h[hDLQID] = id.String()
	h[hDLQStage] = dl.stage
	h[hDLQReason] = dl.reason
	h[hDLQDetail] = clip(dl.detail, maxMetaValue)
	h[hDLQTime] = store.Text(s.now())
	if err := s.headers.protectDeadLetter(h); err != nil {
		return err
	}
	if dl.status != 0 {
		h[hDLQStatus] = strconv.Itoa(dl.status)
	}
	if dl.topic != "" {
		h[hDLQTopic] = dl.topic
	}
	msg := broker.Message{Topic: s.cfg.DLQ.Topic, Key: h[hID], Headers: h, Value: dl.payload}
	if dl.omitted {
		msg.Value = nil
		h[hDLQPayload] = "omitted"
	}
	err = s.pub.publishNow(ctx, "", msg)
	if errors.Is(err, broker.ErrMessageTooLarge) && !dl.omitted {
		h[hDLQPayload] = "omitted"
		msg.Value = nil
		err = s.pub.publishNow(ctx, "", msg)
	}
	if err != nil {
		return fmt.Errorf("ingest: dead-letter %s: %w", h[hID], err)
	}
	return nil
}

// DLQEntry is an indexed dead letter, as the management API returns it.
type DLQEntry struct {
	EventID     string            `json:"event_id"`
	DLQID       string            `json:"dlq_id"`
	Provider    string            `json:"provider"`
	Stage       string            `json:"stage"`
	Reason      string            `json:"reason"`
	Detail      string            `json:"detail"`
	Status      int               `json:"status,omitempty"`
	Topic       string            `json:"topic,omitempty"`
	PayloadSize int               `json:"payload_size"`
	Replayable  bool              `json:"replayable"`
	ReceivedAt  time.Time         `json:"received_at"`
	FailedAt    time.Time         `json:"failed_at"`
	Failures    int               `json:"failures"`
	ReplayedAt  *time.Time        `json:"replayed_at,omitempty"`
	Replays     int               `json:"replays"`
	Headers     map[string]string `json:"headers,omitempty"` // single-entry reads only
	Payload     []byte            `json:"payload,omitempty"` // single-entry reads only (base64)
	payload     []byte
	headers     map[string]string // as stored: sealed values sealed
	hasPayload  bool
}

// indexDeadLetter is the handler of the DLQ index consumer: it upserts one
// row per event. A redelivered dead letter (same dlq-id) changes nothing.
func (s *Service) indexDeadLetter(ctx context.Context, m broker.Message) error {
	h := m.Headers
	eventID := h[hID]
	if eventID == "" || h[hDLQID] == "" {
		s.log.Warn("ignoring a message on the dead-letter topic that this service did not write", "offset", m.Offset)
		return nil
	}
	hdrs, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("ingest: index dead letter: %w", err)
	}
	var payload any // NULL when omitted
	if h[hDLQPayload] != "omitted" {
		payload = m.Value
		if m.Value == nil {
			payload = []byte{}
		}
	}
	status, _ := strconv.Atoi(h[hDLQStatus])
	size, _ := strconv.Atoi(h[hDataSize])
	received := h[hTime]
	if t, err := time.Parse(time.RFC3339Nano, received); err == nil {
		received = store.Text(t)
	}
	failed := h[hDLQTime]
	if failed == "" {
		failed = store.Text(m.Timestamp)
	}
	return s.upsertDeadLetter(ctx, eventID, h, string(hdrs), payload, status, size, received, failed)
}

// DLQFilter selects dead letters.
type DLQFilter struct {
	Provider string
	// Pending selects entries not replayed since their last failure.
	Pending bool
}

// errNotFound answers a dead letter that does not exist.
var errNotFound = newError("WH-NOT-FOUND", "not_found", "no dead letter with that event id")

// DeadLetter reads one dead letter with its headers and payload.
func (s *Service) DeadLetter(ctx context.Context, eventID string) (DLQEntry, error) {
	e, hdrs, payload, err := s.readDeadLetter(ctx, eventID)
	if err != nil {
		return DLQEntry{}, err
	}
	if err := json.Unmarshal([]byte(hdrs), &e.headers); err != nil {
		return DLQEntry{}, fmt.Errorf("ingest: dead letter %s: headers: %w", eventID, err)
	}
	e.Headers = maps.Clone(e.headers)
	redactSealed(e.Headers)
	e.payload = payload
	e.Payload = payload
	s.markReplayable(&e)
	return e, nil
}

// markReplayable: an entry can be republished when its payload was kept and
// its provider still names a valid topic.
func (s *Service) markReplayable(e *DLQEntry) {
	_, err := s.providerTopic(e.Provider)
	e.Replayable = e.hasPayload && err == nil
}

// Replay republishes a dead letter's event to its provider's topic (as the
// current topic configuration names it), with the same event id and
// ce_replay counting replays, and marks the entry replayed.
func (s *Service) Replay(ctx context.Context, eventID string) (DLQEntry, error) {
	e, err := s.DeadLetter(ctx, eventID)
	if err != nil {
		return DLQEntry{}, err
	}
	if !e.Replayable {
		return DLQEntry{}, newError("WH-NOT-REPLAYABLE", "not_replayable", "ingest: dead letter cannot be replayed: "+replayBlocker(e))
	}
	topic, _ := s.providerTopic(e.Provider)
	h := make(map[string]string, len(e.headers))
	for k, v := range e.headers {
		if !strings.HasPrefix(k, "dlq-") {
			h[k] = v
		}
	}
	if _, lost := s.headers.openSealed(h, eventID); len(lost) > 0 {
		s.log.Warn("replayed without headers whose seal could not be opened", "event_id", eventID, "headers", lost)
	}
	h[hReplay] = strconv.Itoa(e.Replays + 1)
	// Back on the provider topic it is unverified again, whatever it was.
	h[hType], h[hVerification] = EventType, Unverified
	delete(h, hDeliveryID)
	msg := broker.Message{Topic: topic, Key: eventID, Headers: h, Value: e.payload}
	if err := s.pub.publishNow(ctx, e.Provider, msg); err != nil {
		s.log.Error("webhook replay failed", "event_id", eventID, "err", err)
		ae := newError("WH-PUBLISH-FAILED", "publish_failed_"+classify(err).String(), "the event could not be republished; retry later")
		ae.RetryAfter = 5
		return DLQEntry{}, ae
	}
	now := s.now()
	if err := s.markReplayed(ctx, eventID, now); err != nil {
		return DLQEntry{}, fmt.Errorf("ingest: replay %s: mark replayed: %w", eventID, err)
	}
	s.hub.publish(Activity{Time: now, Kind: KindReplayed, EventID: eventID, Provider: e.Provider, Topic: topic, Size: e.PayloadSize})
	e.Replays++
	e.ReplayedAt = &now
	e.Topic = topic
	return e, nil
}

func replayBlocker(e DLQEntry) string {
	if !e.hasPayload {
		return "its payload was not kept (" + e.Reason + ")"
	}
	return fmt.Sprintf("provider %q is not a valid provider name", e.Provider)
}
