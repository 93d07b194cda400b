package callbacks

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// ssrfPolicy refuses connections to addresses an outside endpoint should
// never resolve to. It runs in the dialer's Control hook, on the address
// actually being connected to, so a DNS name that resolves (or re-binds) to
// 127.0.0.1 is refused just like the literal, and so is every redirect hop.
type ssrfPolicy struct {
	allowLoopback bool
	allowPrivate  bool
	allowed       []netip.Prefix
}

// ssrfError reports a refused address; attempts that hit it fail permanently.
type ssrfError struct {
	addr   netip.Addr
	reason string
}

func (e *ssrfError) Error() string {
	return fmt.Sprintf("connection to %s refused: %s address (allow it with platform.callbacks.ssrf settings)", e.addr, e.reason)
}

func newSSRFPolicy(s *Settings) *ssrfPolicy {
	p := &ssrfPolicy{allowLoopback: s.SSRF.AllowLoopback, allowPrivate: s.SSRF.AllowPrivate}
	for _, c := range s.SSRF.AllowedCIDRs {
		if pre, err := netip.ParsePrefix(c); err == nil {
			p.allowed = append(p.allowed, pre.Masked())
		}
	}
	return p
}

var (
	cgnat      = netip.MustParsePrefix("100.64.0.0/10")
	reserved4  = netip.MustParsePrefix("240.0.0.0/4")
	thisNet4   = netip.MustParsePrefix("0.0.0.0/8")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	metadataIP = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack
		netip.MustParseAddr("fd00:ec2::254"),   // AWS IPv6
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	}
)

// check returns nil when a connection to a is allowed.
func (p *ssrfPolicy) check(a netip.Addr) error {
	a = a.Unmap().WithZone("")
	for _, pre := range p.allowed {
		if pre.Contains(a) {
			return nil
		}
	}
	for _, m := range metadataIP {
		if a == m {
			return &ssrfError{a, "cloud metadata"}
		}
	}
	// Addresses embedding an IPv4 address are judged by it.
	if a.Is6() && (nat64.Contains(a) || sixToFour.Contains(a)) {
		b := a.As16()
		var v4 [4]byte
		if nat64.Contains(a) {
			copy(v4[:], b[12:16])
		} else {
			copy(v4[:], b[2:6])
		}
		if err := p.check(netip.AddrFrom4(v4)); err != nil {
			return &ssrfError{a, "embedded " + err.(*ssrfError).reason}
		}
	}
	switch {
	case a.IsLoopback():
		if !p.allowLoopback {
			return &ssrfError{a, "loopback"}
		}
	case a.IsPrivate() || cgnat.Contains(a):
		if !p.allowPrivate {
			return &ssrfError{a, "private"}
		}
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return &ssrfError{a, "link-local"}
	case a.IsUnspecified() || thisNet4.Contains(a):
		return &ssrfError{a, "unspecified"}
	case a.IsMulticast() || a.IsInterfaceLocalMulticast():
		return &ssrfError{a, "multicast"}
	case a.Is4() && (reserved4.Contains(a) || a == netip.AddrFrom4([4]byte{255, 255, 255, 255})):
		return &ssrfError{a, "reserved"}
	}
	return nil
}

// control is the net.Dialer Control hook.
func (p *ssrfPolicy) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return &ssrfError{reason: "unparsable"}
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return &ssrfError{reason: "unparsable"}
	}
	return p.check(a)
}
