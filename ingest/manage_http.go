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
	"github.com/agentbridge/bridge/store"
)

// Page is a page of a listing.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

func invalidParameter(format string, args ...any) *apiError {
	return newError("WH-INVALID-PARAMETER", "invalid_parameter", fmt.Sprintf(format, args...))
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
func (s *Service) handleListEvents(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	if err := checkQuery(q, "provider", "status", "limit", "cursor"); err != nil {
		return err
	}
	f := RecordFilter{Provider: q.Get("provider"), Status: q.Get("status")}
	if f.Status != "" && !slices.Contains(recordStatuses, f.Status) {
		return invalidParameter("status must be one of %s", strings.Join(recordStatuses, ", "))
	}
	limit, err := pageLimit(r)
	if err != nil {
		return err
	}
	filter := "events|" + f.Provider + "|" + f.Status
	after, err := s.decodeCursor(q.Get("cursor"), filter)
	if err != nil {
		return err
	}
	items, err := s.listRecords(r.Context(), f, after, limit)
	if err != nil {
		return err
	}
	page := Page[Record]{Items: items}
	if len(items) == limit {
		last := items[len(items)-1]
		page.NextCursor = s.encodeCursor(pageKey{Time: store.Text(last.ProcessedAt), ID: last.EventID}, filter)
	}
	httpx.WriteJSON(w, http.StatusOK, page)
	return nil
}

// GET /api/v1/webhook-dlq?provider=&pending=true&limit=&cursor=
func (s *Service) handleListDLQ(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	if err := checkQuery(q, "provider", "pending", "limit", "cursor"); err != nil {
		return err
	}
	f := DLQFilter{Provider: q.Get("provider")}
	if p := q.Get("pending"); p != "" {
		v, err := strconv.ParseBool(p)
		if err != nil {
			return invalidParameter("pending must be true or false")
		}
		f.Pending = v
	}
	limit, err := pageLimit(r)
	if err != nil {
		return err
	}
	filter := fmt.Sprintf("dlq|%s|%t", f.Provider, f.Pending)
	after, err := s.decodeCursor(q.Get("cursor"), filter)
	if err != nil {
		return err
	}
	items, err := s.listDLQ(r.Context(), f, after, limit)
	if err != nil {
		return err
	}
	page := Page[DLQEntry]{Items: items}
	if len(items) == limit {
		last := items[len(items)-1]
		page.NextCursor = s.encodeCursor(pageKey{Time: store.Text(last.FailedAt), ID: last.EventID}, filter)
	}
	httpx.WriteJSON(w, http.StatusOK, page)
	return nil
}

// GET /api/v1/webhook-dlq/:event_id — with headers and payload (base64).
func (s *Service) handleGetDLQ(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	e, err := s.DeadLetter(r.Context(), ps.ByName("event_id"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, e)
	return nil
}

// POST /api/v1/webhook-dlq/:event_id/replay — 202 with the entry.
func (s *Service) handleReplay(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	e, err := s.Replay(r.Context(), ps.ByName("event_id"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusAccepted, e)
	return nil
}

// sseHeartbeat keeps idle streams (and proxies) alive.
const sseHeartbeat = 15 * time.Second

// GET /api/v1/webhook-events/stream?provider= — Server-Sent Events:
// "event: activity" with an Activity as data; "event: lagged" with
// {"dropped":n} when this client fell behind; ": ping" comments.
func (s *Service) handleStream(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := checkQuery(r.URL.Query(), "provider"); err != nil {
		return err
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		return fmt.Errorf("streaming unsupported")
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
			return nil
		case <-s.done:
			return nil
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
