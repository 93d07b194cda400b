package ingest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// pageKey is the position after which the next page starts.
type pageKey struct {
	Time string `json:"t"`
	ID   string `json:"i"`
}

type cursorBody struct {
	Key    pageKey `json:"k"`
	Filter string  `json:"f"`
}

// Cursors are opaque, signed with a key of this process, and bound to the
// filters of the listing that issued them. A daemon restart invalidates them.
func (s *Service) encodeCursor(k pageKey, filter string) string {
	body, _ := json.Marshal(cursorBody{Key: k, Filter: filter})
	m := hmac.New(sha256.New, s.cursorKey)
	m.Write(body)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

var errBadCursor = newError(http.StatusBadRequest, "WH-INVALID-CURSOR", "invalid_cursor", "the cursor is invalid, expired, or was issued for other filters")

func (s *Service) decodeCursor(raw, filter string) (*pageKey, error) {
	if raw == "" {
		return nil, nil
	}
	b64, sig, ok := strings.Cut(raw, ".")
	if !ok {
		return nil, errBadCursor
	}
	body, err1 := base64.RawURLEncoding.DecodeString(b64)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err := errors.Join(err1, err2); err != nil {
		return nil, errBadCursor
	}
	m := hmac.New(sha256.New, s.cursorKey)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil)[:16], mac) {
		return nil, errBadCursor
	}
	var c cursorBody
	if json.Unmarshal(body, &c) != nil || c.Filter != filter {
		return nil, errBadCursor
	}
	return &c.Key, nil
}

const (
	defaultPageSize = 50
	maxPageSize     = 500
)

// pageLimit reads ?limit= (1..maxPageSize).
func pageLimit(r *http.Request) (int, error) {
	raw := r.URL.Query().Get("limit")
	if raw == "" {
		return defaultPageSize, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxPageSize {
		return 0, newError(http.StatusBadRequest, "WH-INVALID-PARAMETER", "invalid_parameter", "limit must be a whole number from 1 to 500")
	}
	return n, nil
}
