package bridge

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
)

// query validates the query string: only the named parameters, each once.
type query struct {
	v   url.Values
	err error
}

func parseQuery(r *http.Request, allowed ...string) *query {
	v, err := url.ParseQuery(r.URL.RawQuery)
	q := &query{v: v}
	if err != nil {
		q.err = errf(CodeInvalidParameter, "malformed query string")
		return q
	}
	for k, vals := range v {
		if !slices.Contains(allowed, k) {
			q.err = errf(CodeInvalidParameter, "unknown query parameter %q", k)
			return q
		}
		if len(vals) > 1 {
			q.err = errf(CodeInvalidParameter, "query parameter %q given more than once", k)
			return q
		}
	}
	return q
}

func (q *query) intRange(name string, def, min, max int64) int64 {
	if q.err != nil || !q.v.Has(name) {
		return def
	}
	n, err := parseUint(q.v.Get(name))
	if err != nil || int64(n) < min || int64(n) > max || n > 1<<62 {
		if max == 1<<62 {
			q.err = errf(CodeInvalidParameter, "%s must be an integer >= %d", name, min)
		} else {
			q.err = errf(CodeInvalidParameter, "%s must be an integer from %d to %d", name, min, max)
		}
		return def
	}
	return int64(n)
}

func (q *query) boolean(name string) bool {
	if q.err != nil || !q.v.Has(name) {
		return false
	}
	switch q.v.Get(name) {
	case "true":
		return true
	case "false":
		return false
	}
	q.err = errf(CodeInvalidParameter, "%s must be true or false", name)
	return false
}

func (q *query) oneOf(name, def string, allowed ...string) string {
	if q.err != nil || !q.v.Has(name) {
		return def
	}
	v := q.v.Get(name)
	if !slices.Contains(allowed, v) {
		q.err = errf(CodeInvalidParameter, "%s must be one of %s", name, strings.Join(allowed, ", "))
		return def
	}
	return v
}

func jobID(ps httprouter.Params) (string, error) {
	id := ps.ByName("id")
	u, err := uuid.Parse(id)
	if err != nil || u.String() != strings.ToLower(id) || len(id) != 36 {
		return "", errf(CodeInvalidParameter, "job id must be a UUID")
	}
	return strings.ToLower(id), nil
}

// idempotencyKey reads the optional Idempotency-Key header (1..128 characters).
func idempotencyKey(r *http.Request) (string, error) {
	vals := r.Header.Values("Idempotency-Key")
	if len(vals) == 0 {
		return "", nil
	}
	if len(vals) > 1 {
		return "", errf(CodeInvalidParameter, "Idempotency-Key must be sent once")
	}
	k := vals[0]
	if k == "" || utf8.RuneCountInString(k) > 128 || !utf8.ValidString(k) {
		return "", errf(CodeInvalidParameter, "Idempotency-Key must be 1 to 128 characters")
	}
	return k, nil
}

// readBody reads the raw body (bounded by wrap) for decoding and hashing.
func readBody(r *http.Request) ([]byte, error) {
	if err := httpx.CheckMediaType(r, httpx.DecodeOptions{JSONOnly: true}); err != nil {
		return nil, errf(CodeUnsupportedMedia, "%v", err)
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, errf(CodeBodyTooLarge, "request body exceeds %d bytes", maxBody)
	}
	return data, nil
}

// refusedEncoding tells a body refused for what encoding/json would have
// taken silently (a duplicate key, invalid UTF-8, a lone surrogate): the
// bridge answers it as invalid_request with the decoder's own message,
// whatever the route says of other malformed bodies.
func refusedEncoding(err error) bool {
	var be *httpx.BodyError
	return errors.As(err, &be) && (be.Kind == httpx.BodyEncoding || be.Kind == httpx.BodyDuplicateKey)
}

// decodeStrict decodes a body read by readBody: httpx.DecodeBytes refuses
// what encoding/json would take silently (duplicate keys, invalid UTF-8,
// lone surrogates; docs/bridge-api.md) and unknown properties.
func decodeStrict(data []byte, dst any) error {
	return httpx.DecodeBytes(data, dst, httpx.DecodeOptions{})
}

// emptyObject enforces "required JSON object with no properties".
func emptyObject(r *http.Request) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	err = httpx.DecodeBytes(data, &m, httpx.DecodeOptions{AllowUnknown: true})
	if refusedEncoding(err) {
		return err
	}
	if err != nil || m == nil {
		return errf(CodeInvalidRequest, "the body must be the JSON object {}")
	}
	if len(m) > 0 {
		return errf(CodeInvalidRequest, "the body must be an empty JSON object; no properties are allowed")
	}
	return nil
}

func respond(w http.ResponseWriter, status int, v any) error {
	httpx.WriteJSON(w, status, v)
	return nil
}

func replayStored(w http.ResponseWriter, st *Replay) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Idempotent-Replayed", "true")
	w.WriteHeader(st.status)
	_, err := w.Write(append(st.body, '\n'))
	return err
}

func noQuery(r *http.Request) error {
	if r.URL.RawQuery != "" {
		return errf(CodeInvalidParameter, "this endpoint takes no query parameters")
	}
	return nil
}

// parseUint accepts only plain decimal digits (no sign, no spaces).
func parseUint(s string) (uint64, error) {
	if s == "" || len(s) > 19 {
		return 0, errors.New("bad integer")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("bad integer")
		}
	}
	return strconv.ParseUint(s, 10, 64)
}

// decodeChange reads a change's optional Idempotency-Key, refuses a query
// string and decodes the body strictly into dst.
func decodeChange(r *http.Request, dst any) (Idempotency, error) {
	key, err := idempotencyKey(r)
	if err != nil {
		return Idempotency{}, err
	}
	if err := noQuery(r); err != nil {
		return Idempotency{}, err
	}
	data, err := readBody(r)
	if err != nil {
		return Idempotency{}, err
	}
	if err := decodeStrict(data, dst); err != nil {
		return Idempotency{}, err
	}
	return Idempotency{Key: key, Body: data}, nil
}
