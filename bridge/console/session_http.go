package console

import (
	"context"
	"net/http"
	"time"

	"github.com/agentbridge/bridge/httpx"
)

// CSRFHeader carries the session's CSRF token on every change the page
// makes (anything but GET and HEAD); a page on another site can neither read
// the token nor, with SameSite=Strict, send the cookie.
const CSRFHeader = "X-Bridge-CSRF"

// maxSignInBody bounds the sign-in body (a code or a token).
const maxSignInBody = 4 << 10

// CodeResponse answers POST /console/api/codes.
type CodeResponse struct {
	Code      string    `json:"code"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// handleCreateCode issues a sign-in code to the owner token (`bridge
// console`). The URL carries it in the fragment, which browsers never send
// to a server or put in a Referer.
func (s *Service) handleCreateCode(w http.ResponseWriter, r *http.Request) {
	if _, err := httpx.SingleHeader(r.Header, "Authorization"); err != nil {
		writeError(w, errf(codeInvalidRequest, "%v", err))
		return
	}
	if r.Header.Get("Authorization") == "" {
		writeError(w, errf(codeUnauthorized, "sign-in codes are issued to the owner token (Authorization: Bearer <owner.token>)"))
		return
	}
	if !s.o.IsOwner(r) {
		writeError(w, errf(codeOwnerOnly, "sign-in codes are issued only to the owner token"))
		return
	}
	var empty struct{}
	if err := httpx.DecodeJSON(w, r, &empty, httpx.DecodeOptions{MaxBytes: maxSignInBody, AllowEmpty: true}); err != nil {
		writeError(w, err)
		return
	}
	code, exp := s.auth.newCode()
	respond(w, http.StatusCreated, CodeResponse{Code: code, URL: s.o.BridgeURL + Path + "#code=" + code, ExpiresAt: exp.UTC()})
}

// SignInRequest is the body of POST /console/api/session: exactly one of
// a code from `bridge console` or the owner token.
type SignInRequest struct {
	Code  string `json:"code,omitempty"`
	Token string `json:"token,omitempty"`
}

// SessionInfo answers a sign-in and GET /console/api/session.
type SessionInfo struct {
	CSRF        string    `json:"csrf"`
	ExpiresAt   time.Time `json:"expiresAt"`
	Version     string    `json:"version"`
	BridgeURL   string    `json:"bridgeUrl"`
	ServicesURL string    `json:"servicesUrl"`
	DataDir     string    `json:"dataDir"`
}

func (s *Service) info(sess session) SessionInfo {
	return SessionInfo{CSRF: sess.csrf, ExpiresAt: sess.expiresAt.UTC(), Version: s.o.Version,
		BridgeURL: s.o.BridgeURL, ServicesURL: s.o.ServicesURL, DataDir: s.o.DataDir}
}

func (s *Service) handleSignIn(w http.ResponseWriter, r *http.Request) {
	var req SignInRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.DecodeOptions{MaxBytes: maxSignInBody}); err != nil {
		writeError(w, err)
		return
	}
	switch {
	case (req.Code == "") == (req.Token == ""):
		writeError(w, errf(codeInvalidRequest, "send exactly one of code (from `bridge console`) or token (the owner token)"))
		return
	case req.Code != "":
		if !s.auth.redeem(req.Code) {
			writeError(w, errf(codeUnauthorized, "this sign-in code is unknown, already used or expired (codes last %s); run `bridge console` again", CodeTTL))
			return
		}
	default:
		probe := &http.Request{Header: http.Header{"Authorization": {"Bearer " + req.Token}}}
		if !s.o.IsOwner(probe) {
			writeError(w, errf(codeUnauthorized, "this is not the owner token: the console signs in only with owner.token of the data directory, never with a client token"))
			return
		}
	}
	id, sess := s.auth.open()
	http.SetCookie(w, s.sessionCookie(id, false))
	respond(w, http.StatusOK, s.info(*sess))
}

func (s *Service) handleSession(w http.ResponseWriter, r *http.Request) {
	sess, _, ok := s.current(r)
	if !ok {
		writeError(w, errf(codeUnauthorized, "not signed in"))
		return
	}
	respond(w, http.StatusOK, s.info(sess))
}

func (s *Service) handleSignOut(w http.ResponseWriter, r *http.Request) {
	if _, id, ok := s.current(r); ok {
		s.auth.end(id)
	}
	http.SetCookie(w, s.sessionCookie("", true))
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) sessionCookie(id string, expire bool) *http.Cookie {
	c := &http.Cookie{Name: s.cookie, Value: id, Path: Path, HttpOnly: true, SameSite: http.SameSiteStrictMode}
	if expire {
		c.MaxAge = -1
	}
	return c
}

// current returns the request's session, if its cookie names a live one.
func (s *Service) current(r *http.Request) (session, string, bool) {
	c, err := r.Cookie(s.cookie)
	if err != nil || c.Value == "" {
		return session{}, "", false
	}
	sess, ok := s.auth.lookup(c.Value)
	return sess, c.Value, ok
}

// signedIn admits requests of a live session; changes must also carry the
// session's CSRF token.
func (s *Service) signedIn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, _, ok := s.current(r)
		if !ok {
			writeError(w, errf(codeUnauthorized, "not signed in, or the session ended (sign-out, daemon restart or `bridge revoke --id owner`); run `bridge console`"))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if got := r.Header.Get(CSRFHeader); got == "" || !sameSecret(got, sess.csrf) {
				writeError(w, errf(codeCSRF, "a change needs the session's %s header; reload the console", CSRFHeader))
				return
			}
		}
		// A request outlives its session no longer than the session: an
		// event stream closes when the browser is signed out.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-sess.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
