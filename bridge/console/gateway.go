package console

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
)

// The gateway: the pages call the daemon's public APIs under
// /console/api/bridge/... (the bridge listener's /v1/bridge/...) and
// /console/api/services/... (the services listener) with the session
// cookie; the gateway swaps it for the owner's authority. So every view has
// one source of truth, the API that owns its data, and the console has no
// private copy of any rule.

// dropHeaders are the browser's headers that must not reach an API: the
// session's secrets and what would make the request look cross-site.
var dropHeaders = []string{"Cookie", CSRFHeader, "Origin", "Referer", "Authorization"}

func (s *Service) handleBridge(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), apiPath+"bridge")
	out := r.Clone(r.Context())
	raw := "/v1/bridge" + rest
	p, err := cleanPath(raw)
	if err != nil {
		writeError(w, err)
		return
	}
	out.URL.Path, out.URL.RawPath = p, raw
	out.RequestURI = out.URL.RequestURI()
	for _, h := range dropHeaders {
		out.Header.Del(h)
	}
	out.Header.Set("Authorization", "Bearer "+s.o.OwnerToken)
	s.bridge.ServeHTTP(w, out)
}

// servicesPrefixes are the families of services routes the pages use.
var servicesPrefixes = []string{"/api/", "/admin/", "/health/"}

// platformPrefixes need a platform access token (docs/platform-api.md,
// "Authentication"); the rest of the services listener takes the owner
// token.
var platformPrefixes = []string{"/api/v1/tenants/", "/api/v1/identity"}

func (s *Service) handleServices(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), apiPath+"services")
	clean, err := cleanPath(rest)
	if err != nil {
		writeError(w, err)
		return
	}
	if !hasAnyPrefix(clean, servicesPrefixes) {
		writeError(w, errf(codeNotFound, "the console reaches only %s on the services listener", strings.Join(servicesPrefixes, ", ")))
		return
	}
	bearer := s.o.OwnerToken
	platform := hasAnyPrefix(clean, platformPrefixes)
	if platform {
		tok, err := s.platform.get(r.Context())
		if err != nil {
			s.log.Warn("console: platform sign-in failed", "err", err)
			writeError(w, errf(codePlatformUnavailable, "the console could not sign in to the workflow platform: %v", err))
			return
		}
		bearer = tok
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = s.services.Scheme, s.services.Host
			pr.Out.URL.Path, pr.Out.URL.RawPath = clean, rest
			pr.Out.Host = s.services.Host
			for _, h := range dropHeaders {
				pr.Out.Header.Del(h)
			}
			pr.Out.Header.Set("Authorization", "Bearer "+bearer)
		},
		// Streams (webhook activity) pass through as they are written.
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if platform && resp.StatusCode == http.StatusUnauthorized {
				s.platform.forget(bearer) // expired early: sign in again next time
			}
			resp.Header.Del("Set-Cookie")
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the browser went away
			}
			s.log.Warn("console: services listener did not answer", "err", err)
			writeError(w, errf(codeUnavailable, "the services listener did not answer: %v", err))
		},
	}
	proxy.ServeHTTP(w, r)
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// cleanPath unescapes a forwarded path and refuses one that is not clean
// (dot segments, doubled slashes), so no encoded "../" leaves the prefix
// the gateway checked.
func cleanPath(raw string) (string, error) {
	p, err := url.PathUnescape(raw)
	if err != nil {
		return "", errf(codeInvalidRequest, "malformed path")
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	if c != p {
		return "", errf(codeInvalidRequest, "the path %q is not clean", p)
	}
	return p, nil
}
