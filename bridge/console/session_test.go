package console

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/httpx"
)

const ownerTok = "brg_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a console on a loopback listener behind the bridge listener's
// Host/Origin guard, with a stand-in bridge route and services listener
// that report the authority they were called with.
type env struct {
	t        *testing.T
	url      string
	clock    *clock
	svc      *Service
	services *httptest.Server
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)}
	services := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "auth": r.Header.Get("Authorization"),
			"cookie": r.Header.Get("Cookie"), "origin": r.Header.Get("Origin"), "csrf": r.Header.Get(CSRFHeader)})
	}))
	t.Cleanup(services.Close)
	ln := httptest.NewUnstartedServer(nil)
	router := httprouter.New()
	router.GET("/v1/bridge/status", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		_ = json.NewEncoder(w).Encode(map[string]any{"auth": r.Header.Get("Authorization"), "cookie": r.Header.Get("Cookie"), "csrf": r.Header.Get(CSRFHeader)})
	})
	router.POST("/v1/bridge/jobs", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]any{"auth": r.Header.Get("Authorization") == "Bearer "+ownerTok})
	})
	port := ln.Listener.Addr().(*net.TCPAddr).Port
	svc, err := New(Options{OwnerToken: ownerTok, IsOwner: func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+ownerTok },
		BridgeURL: "http://" + ln.Listener.Addr().String(), ServicesURL: services.URL, DataDir: "/tmp/x", Version: "test", Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	svc.Routes(router, nil)
	guard := httpx.NewGuard(port, nil, nil)
	ln.Config.Handler = guard.Wrap(func(w http.ResponseWriter, r *http.Request, reason string) {
		writeError(w, errf(codeOwnerOnly, "%s", reason))
	}, router)
	ln.Start()
	t.Cleanup(ln.Close)
	return &env{t: t, url: ln.URL, clock: c, svc: svc, services: services}
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
}

func (r reply) code() string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// browser is an HTTP client with a cookie jar, like a browser tab.
type browser struct {
	e    *env
	hc   *http.Client
	csrf string
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(method, path, body string, hdr map[string]string) reply {
	b.e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, b.e.url+path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header}
	_ = json.Unmarshal(data, &r.body)
	return r
}

// code asks for a sign-in code as `bridge console` does.
func (e *env) code() string {
	e.t.Helper()
	r := e.browser().do("POST", "/console/api/codes", "", map[string]string{"Authorization": "Bearer " + ownerTok})
	if r.status != http.StatusCreated {
		e.t.Fatalf("code: %d %v", r.status, r.body)
	}
	u, _ := url.Parse(r.body["url"].(string))
	if u.Fragment != "code="+r.body["code"].(string) || u.RawQuery != "" {
		e.t.Fatalf("the code must travel in the fragment only: %s", u)
	}
	return r.body["code"].(string)
}

func (b *browser) signIn(body string) reply {
	r := b.do("POST", "/console/api/session", body, nil)
	if r.status == http.StatusOK {
		b.csrf, _ = r.body["csrf"].(string)
	}
	return r
}

func TestSignInWithCodeSetsAStrictHttpOnlyCookie(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	b := e.browser()
	is.Equal(b.do("GET", "/console/api/session", "", nil).status, http.StatusUnauthorized)
	r := b.signIn(`{"code":"` + e.code() + `"}`)
	is.Equal(r.status, http.StatusOK)
	is.True(b.csrf != "")
	is.Equal(r.body["dataDir"], "/tmp/x")
	c := r.header.Get("Set-Cookie")
	is.True(strings.Contains(c, "HttpOnly"))
	is.True(strings.Contains(c, "SameSite=Strict"))
	is.True(strings.Contains(c, "Path=/console/"))
	is.True(!strings.Contains(c, ownerTok)) // the cookie is a session id, never the token
	is.Equal(b.do("GET", "/console/api/session", "", nil).body["csrf"], b.csrf)

	// The gateway calls the bridge with the owner's authority and passes
	// neither the cookie nor the CSRF token on.
	st := b.do("GET", "/console/api/bridge/status", "", nil)
	is.Equal(st.status, http.StatusOK)
	is.Equal(st.body["auth"], "Bearer "+ownerTok)
	is.Equal(st.body["cookie"], "")
	sv := b.do("GET", "/console/api/services/api/v1/webhook-dlq", "", nil)
	is.Equal(sv.status, http.StatusOK)
	is.Equal(sv.body["path"], "/api/v1/webhook-dlq")
	is.Equal(sv.body["auth"], "Bearer "+ownerTok)
	is.Equal(sv.body["cookie"], "")
	// A change with the CSRF token passes.
	j := b.do("POST", "/console/api/bridge/jobs", `{}`, map[string]string{CSRFHeader: b.csrf})
	is.Equal(j.status, http.StatusAccepted)
	is.Equal(j.body["auth"], true)

	// Sign-out ends the session.
	is.Equal(b.do("DELETE", "/console/api/session", "", map[string]string{CSRFHeader: b.csrf}).status, http.StatusNoContent)
	is.Equal(b.do("GET", "/console/api/bridge/status", "", nil).status, http.StatusUnauthorized)
}

func TestReusedOrExpiredCodeIsRefused(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	code := e.code()
	is.Equal(e.browser().signIn(`{"code":"`+code+`"}`).status, http.StatusOK)
	r := e.browser().signIn(`{"code":"` + code + `"}`) // reused
	is.Equal(r.status, http.StatusUnauthorized)
	is.Equal(r.code(), "unauthorized")
	is.True(r.header.Get("Set-Cookie") == "")

	late := e.code()
	e.clock.add(CodeTTL) // exactly at expiry: too late
	is.Equal(e.browser().signIn(`{"code":"`+late+`"}`).status, http.StatusUnauthorized)

	inTime := e.code()
	e.clock.add(CodeTTL - time.Millisecond)
	is.Equal(e.browser().signIn(`{"code":"`+inTime+`"}`).status, http.StatusOK)

	is.Equal(e.browser().signIn(`{"code":"guessed"}`).status, http.StatusUnauthorized)
}

func TestSignInBodyIsChecked(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	for _, c := range []struct {
		body   string
		status int
	}{
		{`{}`, 400},
		{`{"code":"x","token":"` + ownerTok + `"}`, 400},
		{`{"code":"x","extra":1}`, 400},
		{`[1]`, 400},
		{`{"token":"` + strings.Repeat("a", maxSignInBody) + `"}`, 413},
	} {
		r := e.browser().signIn(c.body)
		is.Equal(r.status, c.status)
		is.True(r.header.Get("Set-Cookie") == "")
	}
	r := e.browser().do("POST", "/console/api/session", `{"code":"x"}`, map[string]string{"Content-Type": "text/plain"})
	is.Equal(r.status, http.StatusUnsupportedMediaType)
}

func TestOwnerTokenSignsInAndAClientTokenIsRefused(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	client := "brg_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	r := e.browser().signIn(`{"token":"` + client + `"}`)
	is.Equal(r.status, http.StatusUnauthorized)
	is.True(strings.Contains(r.body["error"].(map[string]any)["message"].(string), "owner"))
	is.Equal(e.browser().signIn(`{"token":"`+ownerTok+`"}`).status, http.StatusOK)

	// Codes are issued only to the owner token.
	b := e.browser()
	is.Equal(b.do("POST", "/console/api/codes", "", nil).status, http.StatusUnauthorized)
	is.Equal(b.do("POST", "/console/api/codes", "", map[string]string{"Authorization": "Bearer " + client}).status, http.StatusForbidden)
	// A session cookie does not mint codes either: only the bearer owner.
	s := e.browser()
	s.signIn(`{"token":"` + ownerTok + `"}`)
	is.Equal(s.do("POST", "/console/api/codes", "", map[string]string{CSRFHeader: s.csrf}).status, http.StatusUnauthorized)
}

func TestChangesWithoutTheCSRFTokenAreRefused(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	b := e.browser()
	b.signIn(`{"code":"` + e.code() + `"}`)
	for _, hdr := range []map[string]string{nil, {CSRFHeader: "wrong"}, {CSRFHeader: ""}} {
		r := b.do("POST", "/console/api/bridge/jobs", `{}`, hdr)
		is.Equal(r.status, http.StatusForbidden)
		is.Equal(r.code(), "csrf_failed")
		is.Equal(b.do("DELETE", "/console/api/session", "", hdr).status, http.StatusForbidden)
	}
	// Another session's token does not fit this session.
	other := e.browser()
	other.signIn(`{"code":"` + e.code() + `"}`)
	is.Equal(b.do("POST", "/console/api/bridge/jobs", `{}`, map[string]string{CSRFHeader: other.csrf}).status, http.StatusForbidden)
	is.Equal(b.do("POST", "/console/api/bridge/jobs", `{}`, map[string]string{CSRFHeader: b.csrf}).status, http.StatusAccepted)
}

func TestForeignOriginIsRefused(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	b := e.browser()
	b.signIn(`{"code":"` + e.code() + `"}`)
	evil := map[string]string{"Origin": "https://evil.example", CSRFHeader: b.csrf}
	is.Equal(b.do("POST", "/console/api/bridge/jobs", `{}`, evil).status, http.StatusForbidden)
	is.Equal(b.do("GET", "/console/api/bridge/status", "", evil).status, http.StatusForbidden)
	is.Equal(b.do("POST", "/console/api/session", `{"code":"`+e.code()+`"}`, map[string]string{"Origin": "http://localhost.evil:80"}).status, http.StatusForbidden)
	// DNS rebinding: the right address under another name.
	req, _ := http.NewRequest("GET", e.url+"/console/", nil)
	req.Host = "rebind.example:80"
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusForbidden)
	// Its own origin passes.
	is.Equal(b.do("GET", "/console/api/bridge/status", "", map[string]string{"Origin": e.url}).status, http.StatusOK)
}

func TestSessionsEndAndExpire(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	b := e.browser()
	b.signIn(`{"code":"` + e.code() + `"}`)
	e.clock.add(SessionIdle - time.Second)
	is.Equal(b.do("GET", "/console/api/bridge/status", "", nil).status, http.StatusOK) // used: idle time restarts
	e.clock.add(SessionIdle - time.Second)
	is.Equal(b.do("GET", "/console/api/bridge/status", "", nil).status, http.StatusOK)
	e.clock.add(SessionIdle)
	is.Equal(b.do("GET", "/console/api/bridge/status", "", nil).status, http.StatusUnauthorized)

	c := e.browser()
	c.signIn(`{"code":"` + e.code() + `"}`)
	is.Equal(e.svc.EndSessions(), 1) // bridge revoke --id owner
	is.Equal(c.do("GET", "/console/api/session", "", nil).status, http.StatusUnauthorized)
}

func TestPagesCarryAStrictCSP(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	b := e.browser()
	for _, p := range []string{"/console/", "/console/jobs/123", "/console/app.js", "/console/api/session"} {
		r := b.do("GET", p, "", nil)
		is.Equal(r.header.Get("Content-Security-Policy"), CSP)
		is.Equal(r.header.Get("X-Frame-Options"), "DENY")
	}
	is.True(!strings.Contains(CSP, "unsafe-inline"))
	is.Equal(b.do("GET", "/console", "", nil).status, http.StatusFound)
	is.Equal(b.do("POST", "/console/", "{}", nil).status, http.StatusMethodNotAllowed)
	is.Equal(b.do("GET", "/console/nope.js", "", nil).status, http.StatusNotFound)
}

func TestGatewayStaysWithinItsPrefixes(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	b := e.browser()
	b.signIn(`{"code":"` + e.code() + `"}`)
	for _, p := range []string{
		"/console/api/services/idp/oauth/device/approve",
		"/console/api/services/api/%2e%2e/idp/oauth/device/approve",
		"/console/api/services/api//v1",
		"/console/api/bridge/%2e%2e/%2e%2e/v1/chat/completions",
	} {
		r := b.do("GET", p, "", nil)
		is.True(r.status == http.StatusNotFound || r.status == http.StatusBadRequest || r.status == http.StatusTemporaryRedirect) // redirect: to the clean path
	}
	is.Equal(b.do("GET", "/console/api/nothing", "", nil).status, http.StatusNotFound)
}
