package ingest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/agentbridge/bridge/ingest/verify"
	"github.com/agentbridge/bridge/store/broker"
)

// Event is a processed webhook as a sink sees it: the decompressed payload
// whose signature was verified (unless its processor type is none).
type Event struct {
	ID          string
	Provider    string
	DeliveryID  string
	Topic       string
	ReceivedAt  time.Time
	ContentType string
	Header      http.Header
	Payload     []byte
	Meta        Metadata
	Verified    bool
}

// Sink receives verified, deduplicated events. Delivery is at least once:
// after a crash between a sink's return and the durable record of the event,
// the sink sees the event again. Returning an error redelivers the event.
type Sink func(ctx context.Context, ev Event) error

type sinkEntry struct {
	provider string // "" for every provider
	fn       Sink
}

// OnEvent registers a sink for provider's events ("" for all providers).
// Register sinks before Start.
func (s *Service) OnEvent(provider string, fn Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sinks = append(s.sinks, sinkEntry{provider: provider, fn: fn})
}

// maxProcessAttempts is how often a message whose failure cannot even be
// dead-lettered is retried before it is recorded as failed and acknowledged,
// so one poison message cannot stall its topic for ever.
const maxProcessAttempts = 10

// buildVerifiers creates each configured provider's verifier (nil for none).
func buildVerifiers(procs map[string]ProcessorConfig) (map[string]verify.Verifier, error) {
	out := make(map[string]verify.Verifier, len(procs))
	for name, p := range procs {
		var v verify.Verifier
		var err error
		secrets := p.secrets()
		switch p.verifierType(name) {
		case TypeGitHub:
			v, err = verify.NewGitHub(secrets...)
		case TypeStripe:
			v, err = verify.NewStripe(p.Tolerance.D(), secrets...)
		case TypeSlack:
			v, err = verify.NewSlack(p.Tolerance.D(), secrets...)
		case TypeShopify:
			v, err = verify.NewShopify(secrets...)
		case TypeStandard:
			v, err = verify.NewStandard(p.Tolerance.D(), secrets...)
		case TypeHMAC:
			v, err = verify.NewHMAC(verify.HMACOptions{
				Header: p.SignatureHeader, Algorithm: p.Algorithm, Encoding: p.Encoding,
				Prefix: p.SignaturePrefix, DeliveryIDHeader: p.DeliveryIDHeader,
			}, secrets...)
		case TypeNone:
		default:
			err = fmt.Errorf("unknown type %q", p.Type)
		}
		if err != nil {
			// verify's errors never contain the secret.
			return nil, fmt.Errorf("ingest: processors.%s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// processorTopics lists the topics holding configured providers' events.
func (s *Service) processorTopics() []string {
	var topics []string
	for name := range s.verifiers {
		t, err := s.topicFor(name)
		if err != nil {
			s.log.Warn("webhook processor has no valid topic; it will receive nothing", "provider", name, "err", err)
			continue
		}
		if !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	return topics
}

// process is the processor's broker handler: decode, verify, deduplicate,
// hand to sinks, publish to the verified topic, record. Verification
// failures are recorded and dead-lettered, never dropped.
//
// The delivery id is claimed before the sinks run and the verified event is
// published, so two events of one delivery processed at once cannot both
// reach them; a redelivery of the claiming event claims it again.
func (s *Service) process(ctx context.Context, m broker.Message) error {
	now := s.now()
	env, err := ParseEnvelope(m)
	if err != nil {
		return s.processFailure(ctx, m, nil, "malformed_envelope", err.Error())
	}
	v, ok := s.verifiers[env.Provider]
	if !ok {
		return nil // a shared (custom) topic carries providers this process does not verify
	}
	payload, err := s.comp.decompress(env.Payload, env.Encoding)
	if err != nil {
		return s.processFailure(ctx, m, env, "undecodable_payload", err.Error())
	}
	req := verify.Request{Header: env.Header, Body: payload, Now: now}
	status := StatusUnverified
	deliveryID := ""
	if v != nil {
		if err := v.Verify(req); err != nil {
			return s.processFailure(ctx, m, env, verify.ReasonOf(err), err.Error())
		}
		status = StatusVerified
		deliveryID = clip(v.DeliveryID(req), 256)
	}
	rec := Record{EventID: env.ID, Provider: env.Provider, DeliveryID: deliveryID, Status: status,
		Topic: m.Topic, ReceivedAt: env.ReceivedAt, ProcessedAt: now}

	if deliveryID != "" {
		first, err := s.dedupe.claimOrFirst(ctx, env.Provider, deliveryID, env.ID, now)
		if err != nil {
			return err
		}
		if first != "" {
			rec.Status, rec.Reason = StatusDuplicate, "delivery already processed as event "+first
			return s.finish(ctx, rec)
		}
	}
	ev := Event{ID: env.ID, Provider: env.Provider, DeliveryID: deliveryID, Topic: m.Topic, ReceivedAt: env.ReceivedAt,
		ContentType: env.ContentType, Header: env.Header, Payload: payload, Meta: env.Meta, Verified: v != nil}
	s.mu.Lock()
	sinks := slices.Clone(s.sinks)
	s.mu.Unlock()
	for _, sk := range sinks {
		if sk.provider == "" || sk.provider == env.Provider {
			if err := sk.fn(ctx, ev); err != nil {
				return fmt.Errorf("ingest: sink for %s: %w", env.Provider, err)
			}
		}
	}
	if err := s.publishVerified(ctx, m, deliveryID, status); err != nil {
		return err
	}
	return s.finish(ctx, rec)
}

// publishVerified republishes a verified event to its verified topic (see
// envelope.go). Events of type none are not verified and stay on the
// provider topic only.
func (s *Service) publishVerified(ctx context.Context, m broker.Message, deliveryID, status string) error {
	topic := s.cfg.verifiedTopic(m.Headers[hProvider])
	if status != StatusVerified || topic == "" {
		return nil
	}
	h := maps.Clone(m.Headers)
	h[hType], h[hVerification] = VerifiedEventType, Verified
	delete(h, hDeliveryID)
	if deliveryID != "" {
		h[hDeliveryID] = deliveryID
	}
	msg := broker.Message{Topic: topic, Key: m.Key, Headers: h, Value: m.Value}
	if err := s.pub.publishNow(ctx, m.Headers[hProvider], msg); err != nil {
		// Redelivered: the claim is this event's, so it is not a duplicate then.
		return fmt.Errorf("ingest: publish verified event %s to %s: %w", h[hID], topic, err)
	}
	return nil
}

// finish durably records rec.
func (s *Service) finish(ctx context.Context, rec Record) error {
	err := s.db.Write(ctx, func(tx *sql.Tx) error { return writeRecord(tx, rec) })
	if err != nil {
		return err
	}
	kind := map[string]string{StatusVerified: KindVerified, StatusUnverified: KindUnverified, StatusDuplicate: KindDuplicate}[rec.Status]
	s.hub.publish(Activity{Time: rec.ProcessedAt, Kind: kind, EventID: rec.EventID, Provider: rec.Provider,
		Topic: rec.Topic, DeliveryID: rec.DeliveryID, Reason: rec.Reason})
	return nil
}

// processFailure records a processing failure and dead-letters the message
// as it was consumed. An error here makes the broker redeliver.
func (s *Service) processFailure(ctx context.Context, m broker.Message, env *Envelope, reason, detail string) error {
	now := s.now()
	rec := Record{EventID: m.Headers[hID], Provider: m.Headers[hProvider], Status: StatusFailed, Reason: reason,
		Topic: m.Topic, ProcessedAt: now, ReceivedAt: now}
	if env != nil {
		rec.ReceivedAt = env.ReceivedAt
	}
	if rec.EventID == "" {
		rec.EventID = fmt.Sprintf("%s@%d", m.Topic, m.Offset)
	}
	s.log.Warn("webhook processing failed", "event_id", rec.EventID, "provider", rec.Provider, "reason", reason)
	h := m.Headers
	if h[hID] == "" {
		h = map[string]string{hID: rec.EventID}
		for k, v := range m.Headers {
			h[k] = v
		}
	}
	dlErr := s.sendDeadLetter(ctx, deadLetter{headers: h, payload: m.Value, stage: StageProcess, reason: reason, detail: detail, topic: m.Topic})
	recErr := s.db.Write(ctx, func(tx *sql.Tx) error { return writeRecord(tx, rec) })
	if err := errors.Join(dlErr, recErr); err != nil {
		if broker.Attempt(ctx) >= maxProcessAttempts {
			s.log.Error("giving up on a webhook whose failure cannot be recorded", "event_id", rec.EventID, "err", err)
			return nil
		}
		return err
	}
	s.hub.publish(Activity{Time: now, Kind: KindFailed, EventID: rec.EventID, Provider: rec.Provider, Topic: m.Topic, Reason: reason})
	return nil
}
