package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store/broker"
)

// Ack is the body of a 202 acknowledgment: the event was durably published.
type Ack struct {
	Status     string    `json:"status"` // "accepted"
	EventID    string    `json:"event_id"`
	Provider   string    `json:"provider"`
	ReceivedAt time.Time `json:"received_at"`
}

// request is one webhook on its way through the checks.
type request struct {
	provider string
	topic    string
	env      *Envelope
	addr     netip.Addr // source address (peer, or via trusted proxies)
	body     []byte     // valid once bodyRead
	bodyRead bool
	held     int64 // bytes of the body budget this request holds
	tooLarge bool
	// published: the body's copy is durable on the broker and nothing
	// refers to the body any more, so its buffer can be reused.
	published bool
}

// handleWebhook serves every method of /api/v1/webhook/:provider.
//
// Order of checks: provider name, rate limit (429, not dead-lettered: the
// provider retries, and dead-lettering floods would defeat the limiter),
// method, source address, content type, size, body. Every other refusal is
// dead-lettered with its reason, and nothing refused is published to a
// provider topic. A 202 is sent only after the broker has made the event
// durable.
func (s *Service) handleWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	now := s.now()
	req := &request{provider: ps.ByName("provider"), addr: s.source.source(r)}
	// The body is garbage once the request is answered: publication has
	// made its copy durable by then.
	defer func() {
		if req.published {
			s.budget.recycle(req.body)
		}
		s.budget.give(req.held)
	}()
	id, err := uuid.NewV7()
	if err != nil {
		writeError(w, r, err)
		return
	}
	req.env = &Envelope{ID: id.String(), Provider: clip(req.provider, 2*maxProviderLen), ReceivedAt: now, ContentType: clip(r.Header.Get("Content-Type"), maxMetaValue)}
	if s.cfg.MetadataEnrichment.Enabled {
		req.env.Meta = Metadata{
			UserAgent: clip(r.UserAgent(), maxMetaValue),
			SourceIP:  addrString(req.addr),
			RequestID: httpx.RequestID(r),
			Method:    r.Method,
			URI:       clip(r.URL.RequestURI(), 2*maxMetaValue),
			Host:      clip(r.Host, maxMetaValue),
		}
	}

	nameErr := s.checkProvider(req)
	key := req.provider
	if nameErr != nil {
		key = overflowKey
	}
	if ok, wait := s.limiter.allow(key); !ok {
		e := newError("WH-RATE-LIMITED", "rate_limited", "too many webhooks for this provider; retry later")
		e.RetryAfter = retryAfterSeconds(wait)
		s.hub.publish(Activity{Time: now, Kind: KindRejected, EventID: req.env.ID, Provider: req.env.Provider, Reason: e.Reason, Status: e.status()})
		writeError(w, r, e)
		return
	}
	if err := s.validate(w, r, req, nameErr); err != nil {
		s.reject(w, r, req, err)
		return
	}
	s.accept(w, r, req)
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// checkProvider validates the name and resolves the topic.
func (s *Service) checkProvider(req *request) error {
	topic, err := s.providerTopic(req.provider)
	req.topic = topic
	return err
}

// providerTopic validates a provider name (pattern and length when name
// validation is on) and returns its topic.
func (s *Service) providerTopic(provider string) (string, error) {
	if provider == "" || len(provider) > maxProviderLen ||
		(s.cfg.Security.ValidateProviderName && !s.namePattern.MatchString(provider)) {
		return "", newError("WH-INVALID-PROVIDER", "invalid_provider",
			fmt.Sprintf("provider name must match %s and have at most %d characters", s.cfg.Security.ProviderNamePattern, maxProviderLen))
	}
	topic, err := s.topicFor(provider)
	if err != nil {
		return "", newError("WH-INVALID-PROVIDER", "invalid_provider", "provider name does not make a valid topic name")
	}
	return topic, nil
}

// validate applies every check after the rate limit; it reads the body.
func (s *Service) validate(w http.ResponseWriter, r *http.Request, req *request, nameErr error) error {
	sec := s.cfg.Security
	validating := sec.EnableRequestValidation
	if nameErr != nil {
		return nameErr
	}
	if validating && !s.allowedMethods[r.Method] {
		e := newError("WH-METHOD-NOT-ALLOWED", "method_not_allowed", fmt.Sprintf("method %s is not allowed; use %s", r.Method, s.allowHeader))
		e.Allow = s.allowHeader
		return e
	}
	if !s.source.allowed(req.provider, req.addr) {
		return newError("WH-SOURCE-NOT-ALLOWED", "source_not_allowed",
			fmt.Sprintf("source address %s may not post webhooks for %s", addrString(req.addr), req.provider))
	}
	mediaType := ""
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			if validating {
				return newError("WH-UNSUPPORTED-MEDIA-TYPE", "unsupported_content_type", "Content-Type is malformed")
			}
		}
		mediaType = strings.ToLower(mt)
	}
	if validating {
		switch {
		case mediaType == "" && sec.RequireContentType:
			return newError("WH-UNSUPPORTED-MEDIA-TYPE", "content_type_required",
				"a Content-Type is required: "+strings.Join(sec.AllowedContentTypes, " or "))
		case mediaType != "" && !s.contentTypes[mediaType]:
			return newError("WH-UNSUPPORTED-MEDIA-TYPE", "unsupported_content_type",
				fmt.Sprintf("Content-Type %s is not accepted; use %s", mediaType, strings.Join(sec.AllowedContentTypes, " or ")))
		}
	}
	if err := s.readBody(w, r, req); err != nil {
		return err
	}
	body := req.body
	if validating {
		switch {
		case len(body) == 0:
			return newError("WH-EMPTY-BODY", "empty_body", "the request body is empty")
		case isJSON(mediaType) && !validJSON(body):
			return newError("WH-MALFORMED-BODY", "malformed_body", "the body is not valid JSON")
		case mediaType == "application/x-www-form-urlencoded" && !validForm(body):
			return newError("WH-MALFORMED-BODY", "malformed_body", "the body is not valid application/x-www-form-urlencoded")
		}
	}
	hdr, err := s.headers.forward(r.Header)
	if err != nil {
		return newError("WH-HEADERS-TOO-LARGE", "headers_too_large",
			fmt.Sprintf("request headers exceed %d bytes", maxForwardedHeader))
	}
	req.env.Header = hdr
	return nil
}

func isJSON(mt string) bool { return mt == "application/json" || strings.HasSuffix(mt, "+json") }

func validForm(b []byte) bool {
	_, err := url.ParseQuery(string(b))
	return err == nil
}

// payloadLimit is max-payload-size, or the hard ceiling when size
// validation is off.
func (s *Service) payloadLimit() int64 {
	if s.cfg.Security.ValidatePayloadSize {
		return s.cfg.Security.MaxPayloadSize
	}
	return hardMaxPayload
}

// readBody reads at most the limit; one byte more is 413. The body is read
// as it arrives within the shared budget (body.go).
func (s *Service) readBody(w http.ResponseWriter, r *http.Request, req *request) error {
	limit := s.payloadLimit()
	// Made only when needed: formatting it for every request showed in
	// the acknowledgement's allocation profile.
	tooLarge := func() error {
		return newError("WH-PAYLOAD-TOO-LARGE", "payload_too_large", fmt.Sprintf("the body exceeds %d bytes", limit))
	}
	if r.ContentLength > limit {
		// Refuse without reading; the connection cannot be reused.
		w.Header().Set("Connection", "close")
		req.tooLarge = true
		return tooLarge()
	}
	req.bodyRead = true
	buf, held, err := s.budget.readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	req.body, req.held = buf, req.held+held
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errBodyTooBig):
		req.tooLarge = true
		return tooLarge()
	case errors.Is(err, errBodyBudget):
		// The rest of the body is left unread: the connection cannot be reused.
		w.Header().Set("Connection", "close")
		e := newError("WH-OVERLOADED", "overloaded", "too many webhook bodies are being received at once; retry later")
		e.RetryAfter, e.transient = 1, true
		return e
	case errors.Is(err, errBodyTimeout):
		w.Header().Set("Connection", "close")
		e := newError("WH-BODY-TIMEOUT", "body_timeout", "the request body was not received in time")
		e.transient = true
		return e
	default:
		return newError("WH-BAD-REQUEST", "body_read_error", "the request body could not be read")
	}
}

// reject dead-letters a refused request and answers with its problem.
func (s *Service) reject(w http.ResponseWriter, r *http.Request, req *request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		writeError(w, r, err)
		return
	}
	if ae.transient {
		// The client is asked to come back (like 429): dead-lettering what
		// a flood of slow or concurrent bodies left behind would defeat
		// the point of refusing them.
		s.hub.publish(Activity{Time: req.env.ReceivedAt, Kind: KindRejected, EventID: req.env.ID, Provider: req.env.Provider, Topic: req.topic, Reason: ae.Reason, Status: ae.status()})
		writeError(w, r, ae)
		return
	}
	if !req.bodyRead && !req.tooLarge {
		// Keep the payload of a request refused before its body was read,
		// so an operator can inspect and replay it.
		if rerr := s.readBody(w, r, req); rerr != nil {
			req.tooLarge = true // unreadable or too large: not kept
		}
	}
	env := req.env
	if env.Header == nil {
		if hdr, herr := s.headers.forward(r.Header); herr == nil {
			env.Header = hdr
		}
	}
	dl := deadLetter{stage: StageIngest, reason: ae.Reason, detail: ae.Msg, status: ae.status(), topic: req.topic, omitted: req.tooLarge || !req.bodyRead}
	if dl.omitted {
		env.Size = int(max(r.ContentLength, 0))
	} else {
		dl.payload = req.body
		env.Size = len(dl.payload)
	}
	dl.headers = env.headers()
	if err := s.sendDeadLetter(context.WithoutCancel(r.Context()), dl); err != nil {
		s.log.Error("webhook rejected and not dead-lettered", "event_id", env.ID, "provider", env.Provider, "reason", ae.Reason, "err", err)
	}
	s.hub.publish(Activity{Time: env.ReceivedAt, Kind: KindRejected, EventID: env.ID, Provider: env.Provider, Topic: req.topic, Reason: ae.Reason, Status: ae.status()})
	writeError(w, r, ae)
}

// accept publishes the event and acknowledges it once durable.
func (s *Service) accept(w http.ResponseWriter, r *http.Request, req *request) {
	env := req.env
	raw := req.body
	env.Size = len(raw)
	payload, encoding, err := s.comp.compress(raw)
	if err != nil {
		writeError(w, r, err)
		return
	}
	env.Payload, env.Encoding = payload, encoding
	// Detached from the request: a client hanging up must not leave the
	// outcome (topic or DLQ) undecided.
	ctx := context.WithoutCancel(r.Context())
	// The header map is reused once the publication is durable (the
	// broker keeps no reference, broker.Publisher): with the body buffer
	// it was most of what a request allocated (BENCHMARKS.md).
	hdr, _ := s.headerMaps.Get().(map[string]string)
	if hdr == nil {
		hdr = make(map[string]string, 18+len(env.Header))
	}
	msg := broker.Message{Topic: req.topic, Key: env.ID, Headers: env.putHeaders(hdr), Value: env.Payload}
	if err := s.pub.publish(ctx, req.provider, msg); err != nil {
		s.publishFailed(w, r, req, err)
		return
	}
	clear(hdr)
	s.headerMaps.Put(hdr)
	req.published = true
	s.hub.publish(Activity{Time: env.ReceivedAt, Kind: KindAccepted, EventID: env.ID, Provider: req.provider, Topic: req.topic, Status: http.StatusAccepted, Size: env.Size})
	w.Header().Set("X-Webhook-Event-Id", env.ID)
	writeAck(w, Ack{Status: "accepted", EventID: env.ID, Provider: req.provider, ReceivedAt: env.ReceivedAt.UTC()})
}

// publishFailed answers 503 (the provider should retry) and dead-letters the
// event, except when the service is merely busy or closing.
func (s *Service) publishFailed(w http.ResponseWriter, r *http.Request, req *request, err error) {
	env := req.env
	var ae *apiError
	switch {
	case errors.Is(err, errOverloaded):
		ae = newError("WH-OVERLOADED", "overloaded", "the publication buffer is full; retry later")
		ae.RetryAfter = 1
		s.hub.publish(Activity{Time: env.ReceivedAt, Kind: KindRejected, EventID: env.ID, Provider: req.provider, Reason: ae.Reason, Status: ae.status()})
		writeError(w, r, ae)
		return
	case errors.Is(err, errClosing):
		ae = newError("WH-UNAVAILABLE", "shutting_down", "the service is shutting down; retry later")
		ae.RetryAfter = 5
		writeError(w, r, ae)
		return
	}
	class := classify(err)
	ae = newError("WH-PUBLISH-FAILED", "publish_failed_"+class.String(), "the event could not be published; retry later")
	ae.RetryAfter = 5
	if class == classClient {
		ae.Code, ae.RetryAfter = "WH-UNPUBLISHABLE", 0
		ae.Msg = "the event cannot be published (for example, larger than the broker accepts)"
	}
	level := slog.LevelError
	if class == classClient {
		// The event itself cannot be published (422 to the client, e.g.
		// larger than the broker takes): not a fault of the daemon.
		level = slog.LevelWarn
	}
	s.log.Log(r.Context(), level, "webhook publication failed", "event_id", env.ID, "provider", req.provider, "topic", req.topic, "class", class.String(), "err", err)
	dl := deadLetter{headers: env.headers(), payload: env.Payload, stage: StagePublish, reason: ae.Reason, detail: err.Error(), status: ae.status(), topic: req.topic}
	if derr := s.sendDeadLetter(context.WithoutCancel(r.Context()), dl); derr != nil {
		s.log.Error("webhook publication failed and was not dead-lettered", "event_id", env.ID, "err", derr)
	}
	s.hub.publish(Activity{Time: env.ReceivedAt, Kind: KindFailed, EventID: env.ID, Provider: req.provider, Topic: req.topic, Reason: ae.Reason, Status: ae.status()})
	writeError(w, r, ae)
}
