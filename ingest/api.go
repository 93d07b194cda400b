package ingest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
)

// Management routes, owner token only (the CLI's `bridge webhooks ...`).
const (
	pathWebhook   = "/api/v1/webhook/:provider"
	pathEvents    = "/api/v1/webhook-events"
	pathStream    = "/api/v1/webhook-events/stream"
	pathDLQ       = "/api/v1/webhook-dlq"
	pathDLQEntry  = "/api/v1/webhook-dlq/:event_id"
	pathDLQReplay = "/api/v1/webhook-dlq/:event_id/replay"
)

// Routes registers the ingestion endpoint (every method: methods outside
// security.allowed-methods answer a 405 problem) and the management API.
func (s *Service) Routes(r *httprouter.Router) {
	for _, m := range knownMethods {
		r.Handle(m, pathWebhook, s.handleWebhook)
	}
	r.GET(pathEvents, s.owner(s.handleListEvents))
	r.GET(pathStream, s.owner(s.handleStream))
	r.GET(pathDLQ, s.owner(s.handleListDLQ))
	r.GET(pathDLQEntry, s.owner(s.handleGetDLQ))
	r.POST(pathDLQReplay, s.owner(s.handleReplay))
}

var errUnauthorized = newError(http.StatusUnauthorized, "WH-UNAUTHORIZED", "unauthorized", "the owner token is required (Authorization: Bearer)")

func (s *Service) owner(h httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if _, err := httpx.SingleHeader(r.Header, "Authorization"); err != nil {
			// Which of two tokens was meant is a guess (issue 20, item 7).
			writeError(w, r, newError(http.StatusBadRequest, "WH-INVALID-HEADER", "invalid_header", err.Error()))
			return
		}
		if s.isOwner == nil || !s.isOwner(r) {
			writeError(w, r, errUnauthorized)
			return
		}
		h(w, r, ps)
	}
}

// Page is a page of a listing.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

func invalidParameter(format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, "WH-INVALID-PARAMETER", "invalid_parameter", fmt.Sprintf(format, args...))
}

// checkQuery refuses a query parameter the route does not know, a parameter
// given twice (which value would win is a guess) and a provider filter that
// no event could have: a bad filter must not read as an empty result.
func checkQuery(q url.Values, known ...string) error {
	for k, vs := range q {
		if !slices.Contains(known, k) {
			return invalidParameter("unknown query parameter %q; this route takes %s", k, strings.Join(known, ", "))
		}
		if len(vs) > 1 {
			return invalidParameter("query parameter %q is given %d times", k, len(vs))
		}
	}
	if p := q.Get("provider"); len(p) > 2*maxProviderLen || !utf8.ValidString(p) {
		return invalidParameter("provider must be a provider name of at most %d characters", maxProviderLen)
	}
	return nil
}

// recordStatuses are the values of ?status= (Record.Status).
var recordStatuses = []string{StatusVerified, StatusUnverified, StatusDuplicate, StatusFailed}

// GET /api/v1/webhook-events?provider=&status=&limit=&cursor=
func (s *Service) handleListEvents(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	if err := checkQuery(q, "provider", "status", "limit", "cursor"); err != nil {
		writeError(w, r, err)
		return
	}
	f := RecordFilter{Provider: q.Get("provider"), Status: q.Get("status")}
	if f.Status != "" && !slices.Contains(recordStatuses, f.Status) {
		writeError(w, r, invalidParameter("status must be one of %s", strings.Join(recordStatuses, ", ")))
		return
	}
	limit, err := pageLimit(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	filter := "events|" + f.Provider + "|" + f.Status
	after, err := s.decodeCursor(q.Get("cursor"), filter)
	if err != nil {
		writeError(w, r, err)
		return
	}
	items, err := s.listRecords(r.Context(), f, after, limit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	page := Page[Record]{Items: items}
	if len(items) == limit {
		last := items[len(items)-1]
		page.NextCursor = s.encodeCursor(pageKey{Time: fmtTime(last.ProcessedAt), ID: last.EventID}, filter)
	}
	httpx.WriteJSON(w, http.StatusOK, page)
}

// GET /api/v1/webhook-dlq?provider=&pending=true&limit=&cursor=
func (s *Service) handleListDLQ(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	if err := checkQuery(q, "provider", "pending", "limit", "cursor"); err != nil {
		writeError(w, r, err)
		return
	}
	f := DLQFilter{Provider: q.Get("provider")}
	if p := q.Get("pending"); p != "" {
		v, err := strconv.ParseBool(p)
		if err != nil {
			writeError(w, r, invalidParameter("pending must be true or false"))
			return
		}
		f.Pending = v
	}
	limit, err := pageLimit(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	filter := fmt.Sprintf("dlq|%s|%t", f.Provider, f.Pending)
	after, err := s.decodeCursor(q.Get("cursor"), filter)
	if err != nil {
		writeError(w, r, err)
		return
	}
	items, err := s.listDLQ(r.Context(), f, after, limit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	page := Page[DLQEntry]{Items: items}
	if len(items) == limit {
		last := items[len(items)-1]
		page.NextCursor = s.encodeCursor(pageKey{Time: fmtTime(last.FailedAt), ID: last.EventID}, filter)
	}
	httpx.WriteJSON(w, http.StatusOK, page)
}

// GET /api/v1/webhook-dlq/:event_id — with headers and payload (base64).
func (s *Service) handleGetDLQ(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	e, err := s.DeadLetter(r.Context(), ps.ByName("event_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, e)
}

// POST /api/v1/webhook-dlq/:event_id/replay — 202 with the entry.
func (s *Service) handleReplay(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	e, err := s.Replay(r.Context(), ps.ByName("event_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusAccepted, e)
}

// sseHeartbeat keeps idle streams (and proxies) alive.
const sseHeartbeat = 15 * time.Second

// GET /api/v1/webhook-events/stream?provider= — Server-Sent Events:
// "event: activity" with an Activity as data; "event: lagged" with
// {"dropped":n} when this client fell behind; ": ping" comments.
func (s *Service) handleStream(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if err := checkQuery(r.URL.Query(), "provider"); err != nil {
		writeError(w, r, err)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, r, fmt.Errorf("streaming unsupported"))
		return
	}
	sub := s.hub.subscribe(r.URL.Query().Get("provider"))
	defer s.hub.unsubscribe(sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": connected\n\n")
	fl.Flush()
	tick := time.NewTicker(sseHeartbeat)
	defer tick.Stop()
	var reported int64
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-tick.C:
			fmt.Fprint(w, ": ping\n\n")
		case a := <-sub.ch:
			if d := sub.dropped.Load(); d > reported {
				fmt.Fprintf(w, "event: lagged\ndata: {\"dropped\":%d}\n\n", d-reported)
				reported = d
			}
			data, _ := json.Marshal(a)
			fmt.Fprintf(w, "event: activity\ndata: %s\n\n", data)
		}
		fl.Flush()
	}
}
