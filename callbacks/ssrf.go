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
			// Addresses are checked unmapped, so ::ffff:a.b.c.d/n is a.b.c.d/(n-96).
			if pre.Addr().Is4In6() && pre.Bits() >= 96 {
				pre = netip.PrefixFrom(pre.Addr().Unmap(), pre.Bits()-96)
			}
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
//
// Cloud metadata addresses come first: an allowed range that covers one
// (169.254.0.0/16, 0.0.0.0/0, 64:ff9b::/96) does not open it; only an entry
// naming exactly that address (a /32 or /128, or the IPv4 address a NAT64 or
// 6to4 address embeds) does (callbacks/README.md, "SSRF").
func (p *ssrfPolicy) check(a netip.Addr) error {
	a = a.Unmap().WithZone("")
	v4, embeds := embedded4(a)
	if isMetadata(a) || (embeds && isMetadata(v4)) {
		if p.named(a) || (embeds && p.named(v4)) {
			return nil
		}
		return &ssrfError{a, "cloud metadata"}
	}
	for _, pre := range p.allowed {
		if pre.Contains(a) {
			return nil
		}
	}
	// Addresses embedding an IPv4 address are judged by it.
	if embeds {
		if err := p.check(v4); err != nil {
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

func isMetadata(a netip.Addr) bool {
	for _, m := range metadataIP {
		if a == m {
			return true
		}
	}
	return false
}

// named reports whether an allowed entry is exactly the single address a.
func (p *ssrfPolicy) named(a netip.Addr) bool {
	for _, pre := range p.allowed {
		if pre.IsSingleIP() && pre.Addr() == a {
			return true
		}
	}
	return false
}

// embedded4 returns the IPv4 address a NAT64 or 6to4 address carries.
func embedded4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	var v4 [4]byte
	switch {
	case nat64.Contains(a):
		copy(v4[:], b[12:16])
	case sixToFour.Contains(a):
		copy(v4[:], b[2:6])
	default:
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(v4), true
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
