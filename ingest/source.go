package ingest

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// sourceFilter finds a request's source address and applies the
// per-provider allow-list.
type sourceFilter struct {
	enabled bool
	allow   map[string][]netip.Prefix
	trusted []netip.Prefix
}

func newSourceFilter(s Security, allow map[string][]string) (*sourceFilter, error) {
	f := &sourceFilter{enabled: s.EnableIPWhitelist, allow: map[string][]netip.Prefix{}}
	var err error
	if f.trusted, err = parsePrefixes(s.TrustedProxies); err != nil {
		return nil, err
	}
	for p, list := range allow {
		if f.allow[p], err = parsePrefixes(list); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func contains(list []netip.Prefix, a netip.Addr) bool {
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// source returns the client address: the peer, or, when the peer is a
// trusted proxy, the right-most X-Forwarded-For entry that is not itself a
// trusted proxy (entries further left are client-controlled).
func (f *sourceFilter) source(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	peer = peer.Unmap().WithZone("")
	if len(f.trusted) == 0 || !contains(f.trusted, peer) {
		return peer
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer // a malformed chain is not believed past this point
		}
		a = a.Unmap().WithZone("")
		if !contains(f.trusted, a) {
			return a
		}
	}
	return peer
}

// allowed reports whether addr may post for provider. With the allow-list
// enabled a provider without entries accepts nobody.
func (f *sourceFilter) allowed(provider string, addr netip.Addr) bool {
	if !f.enabled {
		return true
	}
	return addr.IsValid() && contains(f.allow[provider], addr)
}
