package bridge

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
)

// TestWrapLogsAndShapes: a client's 4xx is logged at debug level, never as
// an error; a server fault and a panic are errors; a panic answers 500 in
// the route's error shape (bridge or OpenAI), not text/plain.
func TestWrapLogsAndShapes(t *testing.T) {
	t.Parallel()
	tok, err := daemon.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s := &Service{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), ownerHash: daemon.TokenHash(tok)}
	serve := func(path string, h handlerFunc) (*httptest.ResponseRecorder, string) {
		logs.Reset()
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", path, strings.NewReader("{}"))
		r.Header.Set("Authorization", "Bearer "+tok)
		s.wrap(ScopeRead, h)(w, r, httprouter.Params{})
		return w, logs.String()
	}
	errorShape := func(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
		t.Helper()
		var body struct {
			Error map[string]any `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error == nil || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("not a JSON error: %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body)
		}
		return body.Error
	}
	for name, err := range map[string]error{
		"domain":  errf(CodeInvalidRequest, "bad body"),
		"decoder": &httpx.BodyError{Status: http.StatusBadRequest, Msg: "body is not JSON"},
		"auth":    errf(CodeNotFound, "no job"),
	} {
		for _, path := range []string{"/v1/bridge/jobs", "/v1/chat/completions"} {
			w, log := serve(path, func(http.ResponseWriter, *http.Request, Principal, httprouter.Params) error { return err })
			if w.Code < 400 || w.Code >= 500 || strings.Contains(log, "level=ERROR") || !strings.Contains(log, "level=DEBUG") {
				t.Errorf("%s on %s: %d, logged %q", name, path, w.Code, log)
			}
		}
	}
	w, log := serve("/v1/bridge/jobs", func(http.ResponseWriter, *http.Request, Principal, httprouter.Params) error {
		return errf(CodeInternal, "disk full")
	})
	if w.Code != 500 || !strings.Contains(log, "level=ERROR") {
		t.Errorf("a server fault: %d, logged %q", w.Code, log)
	}

	boom := func(http.ResponseWriter, *http.Request, Principal, httprouter.Params) error { panic("boom at /secret") }
	w, log = serve("/v1/bridge/jobs", boom)
	e := errorShape(t, w)
	if w.Code != 500 || e["code"] != CodeInternal || strings.Contains(w.Body.String(), "secret") || !strings.Contains(log, "level=ERROR") || !strings.Contains(log, "boom") {
		t.Errorf("panic on a bridge route: %d %s, logged %q", w.Code, w.Body, log)
	}
	w, _ = serve("/v1/chat/completions", boom)
	if e := errorShape(t, w); w.Code != 500 || e["type"] != "server_error" {
		t.Errorf("panic on chat: %d %s", w.Code, w.Body)
	}
}
