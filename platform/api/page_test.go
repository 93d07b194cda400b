package api_test

import (
	"net/http/httptest"
	"net/url"
	"testing"
)

// FuzzCursor: an arbitrary cursor is refused with 422 (never a panic, a
// 500 or a page): cursors are authenticated.
func FuzzCursor(f *testing.F) {
	for _, s := range []string{"", "a.b", "eyJhIjoiMSJ9.AAAA", "....", "eyJhIjoiMDAwMDAwMDAwMDAwMDAwMDAwMDEifQ.xxxxxxxxxxxxxxxxxxxxxx"} {
		f.Add(s)
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, cursor string) {
		r := httptest.NewRequest("GET", "/api/v1/tenants/"+tenantA+"/things?cursor="+url.QueryEscape(cursor), nil)
		r.Header.Set("Authorization", "Bearer alice")
		w := httptest.NewRecorder()
		e.srv.Config.Handler.ServeHTTP(w, r)
		if w.Code != 422 {
			t.Fatalf("cursor %q: status %d", cursor, w.Code)
		}
	})
}
