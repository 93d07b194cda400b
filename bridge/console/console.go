// Package console serves the daemon's web console on the bridge listener at
// /console/ (docs/console.md): embedded static pages, a sign-in that trades a
// single-use code (from `bridge console`) or the pasted owner token for an
// HttpOnly session cookie, and a same-origin gateway through which the pages
// call the daemon's public APIs with the owner's authority. The console keeps
// no data of its own: every view reads the API that owns it.
package console

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
)

//go:embed assets
var assets embed.FS

// Path is where the console is served on the bridge listener.
const Path = "/console/"

// CSP is the console's Content-Security-Policy: only its own scripts,
// styles and API, no inline code, never framed.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Options configures New.
type Options struct {
	// OwnerToken is the daemon owner token: the authority of every session.
	OwnerToken string
	// IsOwner recognises the owner token on a request (bearer).
	IsOwner func(*http.Request) bool
	// BridgeURL and ServicesURL are the listeners' base addresses
	// (http://127.0.0.1:port); DataDir and Version are shown on the overview.
	BridgeURL, ServicesURL string
	DataDir, Version       string
	Logger                 *slog.Logger
	// Now is the clock of codes and sessions (tests inject one).
	Now func() time.Time
	// HTTP sends the gateway's requests to the services listener.
	HTTP *http.Client
}

// Service is the console.
type Service struct {
	o        Options
	log      *slog.Logger
	auth     *authority
	bridge   http.Handler // the bridge listener's router, called in process
	services *url.URL
	platform *platformToken
	cookie   string
}

// New builds the console.
func New(o Options) (*Service, error) {
	if o.OwnerToken == "" || o.IsOwner == nil {
		return nil, errors.New("console: the owner token is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	su, err := url.Parse(o.ServicesURL)
	if err != nil || su.Host == "" {
		return nil, errors.New("console: the services listener's address is required")
	}
	bu, err := url.Parse(o.BridgeURL)
	if err != nil || bu.Host == "" {
		return nil, errors.New("console: the bridge listener's address is required")
	}
	s := &Service{o: o, log: o.Logger.With("subsystem", "console"), auth: newAuthority(o.Now), services: su,
		// Cookies are not scoped by port: two daemons on one machine must
		// not overwrite each other's session, so the name carries the port.
		cookie: "bridge_console_" + bu.Port()}
	s.platform = &platformToken{http: o.HTTP, services: o.ServicesURL, owner: o.OwnerToken, now: o.Now}
	return s, nil
}

// Start implements the daemon's service lifecycle; the console has no loops.
func (s *Service) Start(context.Context) error { return nil }

// Close ends every session.
func (s *Service) Close() error {
	s.auth.endAll()
	return nil
}

// EndSessions signs every browser out (`bridge revoke --id owner`) and
// returns how many sessions ended.
func (s *Service) EndSessions() int { return s.auth.endAll() }

// Routes registers the console on the bridge listener: everything under
// /console/, the API under /console/api/ (one catch-all, since httprouter
// cannot hold static names beside it). bridge is also the handler the
// gateway calls in process for /v1/bridge/ routes.
func (s *Service) Routes(bridge, _ *httprouter.Router) {
	s.bridge = bridge
	api := http.NewServeMux()
	api.Handle("POST /console/api/codes", http.HandlerFunc(s.handleCreateCode))
	api.Handle("POST /console/api/session", http.HandlerFunc(s.handleSignIn))
	api.Handle("GET /console/api/session", http.HandlerFunc(s.handleSession))
	api.Handle("DELETE /console/api/session", s.signedIn(http.HandlerFunc(s.handleSignOut)))
	api.Handle("/console/api/bridge/", s.signedIn(http.HandlerFunc(s.handleBridge)))
	api.Handle("/console/api/services/", s.signedIn(http.HandlerFunc(s.handleServices)))
	api.Handle("/console/api/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errf(codeNotFound, "no console route %s %s", r.Method, r.URL.Path))
	}))
	static := s.static()
	all := s.secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, apiPath) {
			w.Header().Set("Cache-Control", "no-store")
			api.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, errf(codeMethodNotAllowed, "the console's pages answer only GET and HEAD"))
			return
		}
		static.ServeHTTP(w, r)
	}))
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		bridge.Handler(m, "/console/*file", all)
	}
	bridge.Handler(http.MethodGet, "/console", http.RedirectHandler(Path, http.StatusFound))
}

// apiPath prefixes the console's own API.
const apiPath = Path + "api/"

// static serves the embedded pages. Every path that is not an asset
// answers index.html, so a reload on any page works.
func (s *Service) static() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Path[len(Path):]
		if name == "" || name == "index.html" {
			serveIndex(w, r, sub)
			return
		}
		if _, err := fs.Stat(sub, name); err != nil {
			writeError(w, errf(codeNotFound, "no console file %q", name))
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	})
}

func serveIndex(w http.ResponseWriter, r *http.Request, sub fs.FS) {
	data, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
}

// secure sets the headers every console response carries.
func (s *Service) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}
