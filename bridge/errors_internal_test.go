package bridge

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// Unknown errors never leak their text.
func TestWriteErrorMapping(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err        error
		status     int
		want, hide string
	}{
		"domain":  {errf(CodeNotFound, "no job %s", "x"), 404, `"no job x"`, ""},
		"unknown": {errors.New("disk on fire at /secret/path"), 500, `"internal error"`, "/secret/path"},
	} {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			writeError(w, tc.err)
			body := w.Body.String()
			if w.Code != tc.status || !strings.Contains(body, tc.want) || (tc.hide != "" && strings.Contains(body, tc.hide)) {
				t.Fatalf("status %d body %s", w.Code, body)
			}
		})
	}
}
