package httpx

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// Guard checks the Host and Origin of every request against an allow-list:
// the loopback names with the listener's actual port, plus hosts and origins
// configured for a tunnel. A browser page on another origin, or one reached
// through a DNS name that re-binds to 127.0.0.1, is refused.
type Guard struct {
	mu      sync.RWMutex
	hosts   map[string]bool // lower-case host:port or host
	origins map[string]bool // lower-case scheme://host[:port]
}

// NewGuard builds a guard for a listener on port with extra allowed hosts
// ("tunnel.example.com" or "tunnel.example.com:443") and origins
// ("https://tunnel.example.com").
func NewGuard(port int, extraHosts, extraOrigins []string) *Guard {
	g := &Guard{hosts: map[string]bool{}, origins: map[string]bool{}}
	p := strconv.Itoa(port)
	for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
		g.hosts[h+":"+p] = true
		g.origins["http://"+h+":"+p] = true
		g.origins["https://"+h+":"+p] = true
	}
	for _, h := range extraHosts {
		g.hosts[strings.ToLower(strings.TrimSpace(h))] = true
	}
	for _, o := range extraOrigins {
		g.origins[strings.TrimRight(strings.ToLower(strings.TrimSpace(o)), "/")] = true
	}
	return g
}

// Check reports whether r's Host and Origin are allowed, and why not.
func (g *Guard) Check(r *http.Request) (ok bool, reason string) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	host := strings.ToLower(r.Host)
	if host == "" {
		return false, "missing Host header"
	}
	if !g.hosts[host] {
		// A configured tunnel host without a port matches any port.
		h, _, err := net.SplitHostPort(host)
		if err != nil || !g.hosts[h] {
			return false, "Host is not allowed"
		}
	}
	origins := r.Header.Values("Origin")
	if len(origins) > 1 {
		return false, "more than one Origin header"
	}
	if len(origins) == 1 {
		o := strings.ToLower(origins[0])
		u, err := url.Parse(o)
		if o == "null" || err != nil || u.Host == "" || !g.origins[strings.TrimRight(o, "/")] {
			return false, "Origin is not allowed"
		}
	}
	return true, ""
}

// Wrap refuses disallowed requests with deny (which writes the surface's own
// error shape) and passes the rest to next.
func (g *Guard) Wrap(deny func(w http.ResponseWriter, r *http.Request, reason string), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, reason := g.Check(r); !ok {
			deny(w, r, reason)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// IsLoopbackHost reports whether host (an IP or a name) is a loopback address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
