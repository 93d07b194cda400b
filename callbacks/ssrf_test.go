package callbacks

import (
	"errors"
	"net/netip"
	"testing"
)

func TestSSRFPolicy(t *testing.T) {
	t.Parallel()
	def := newSSRFPolicy(&Settings{})
	loop := &ssrfPolicy{allowLoopback: true}
	priv := &ssrfPolicy{allowPrivate: true}
	cidr := &ssrfPolicy{allowed: []netip.Prefix{netip.MustParsePrefix("169.254.169.254/32")}}
	cases := []struct {
		addr                      string
		def, loop, priv, cidrOpen bool // allowed under each policy
	}{
		{"93.184.216.34", true, true, true, true},
		{"2606:2800:220:1:248:1893:25c8:1946", true, true, true, true},
		{"127.0.0.1", false, true, false, false},
		{"127.9.9.9", false, true, false, false},
		{"::1", false, true, false, false},
		{"::ffff:127.0.0.1", false, true, false, false},
		{"10.1.2.3", false, false, true, false},
		{"172.16.0.1", false, false, true, false},
		{"172.32.0.1", true, true, true, true},
		{"192.168.1.1", false, false, true, false},
		{"100.64.0.1", false, false, true, false},
		{"fd12::1", false, false, true, false},
		{"169.254.1.1", false, false, false, false},
		{"fe80::1", false, false, false, false},
		{"169.254.169.254", false, false, false, true},
		{"fd00:ec2::254", false, false, false, false},
		{"100.100.100.200", false, false, false, false},
		{"0.0.0.0", false, false, false, false},
		{"::", false, false, false, false},
		{"224.0.0.1", false, false, false, false},
		{"ff02::1", false, false, false, false},
		{"240.0.0.1", false, false, false, false},
		{"255.255.255.255", false, false, false, false},
		{"64:ff9b::7f00:1", false, true, false, false}, // NAT64 of 127.0.0.1
		{"64:ff9b::5db8:d822", true, true, true, true}, // NAT64 of a public address
		{"2002:a00:1::", false, false, true, false},    // 6to4 of 10.0.0.1
	}
	for _, c := range cases {
		a := netip.MustParseAddr(c.addr)
		for i, p := range []*ssrfPolicy{def, loop, priv, cidr} {
			want := []bool{c.def, c.loop, c.priv, c.cidrOpen}[i]
			err := p.check(a)
			if (err == nil) != want {
				t.Errorf("policy %d, %s: err = %v, want allowed=%v", i, c.addr, err, want)
			}
			var se *ssrfError
			if err != nil && !errors.As(err, &se) {
				t.Errorf("%s: %T is not an ssrfError", c.addr, err)
			}
		}
	}
	if err := def.control("tcp", "not-an-address", nil); err == nil {
		t.Error("an unparsable address must be refused")
	}
	if err := def.control("tcp", "[::1]:80", nil); err == nil {
		t.Error("[::1]:80 must be refused")
	}
	if err := def.control("tcp", "93.184.216.34:443", nil); err != nil {
		t.Error(err)
	}
}

// TestSSRFMetadataNeedsExactEntry: an allowed range covering a cloud
// metadata address does not open it (issue 20, item 6); an entry naming the
// address exactly does.
func TestSSRFMetadataNeedsExactEntry(t *testing.T) {
	t.Parallel()
	policy := func(loopbackAndPrivate bool, cidrs ...string) *ssrfPolicy {
		var s Settings
		s.SSRF.AllowLoopback, s.SSRF.AllowPrivate, s.SSRF.AllowedCIDRs = loopbackAndPrivate, loopbackAndPrivate, cidrs
		return newSSRFPolicy(&s)
	}
	wide := policy(true, "169.254.0.0/16", "0.0.0.0/0", "::/0", "100.64.0.0/10")
	for _, addr := range []string{"169.254.169.254", "::ffff:169.254.169.254", "fd00:ec2::254", "100.100.100.200", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1"} {
		if err := wide.check(netip.MustParseAddr(addr)); err == nil {
			t.Errorf("%s: opened by an allowed range", addr)
		}
	}
	// The rest of the ranges stays open.
	for _, addr := range []string{"169.254.1.1", "10.0.0.1", "100.100.100.201", "fe80::1"} {
		if err := wide.check(netip.MustParseAddr(addr)); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	if err := policy(false, "169.254.169.254/32").check(netip.MustParseAddr("169.254.169.254")); err != nil {
		t.Errorf("169.254.169.254/32: %v", err)
	}
	exact := policy(false, "::ffff:169.254.169.254/128", "fd00:ec2::254/128") // the mapped form names it too
	for _, addr := range []string{"169.254.169.254", "fd00:ec2::254", "64:ff9b::a9fe:a9fe"} {
		if err := exact.check(netip.MustParseAddr(addr)); err != nil {
			t.Errorf("%s named exactly: %v", addr, err)
		}
	}
	for _, addr := range []string{"100.100.100.200", "169.254.169.253"} {
		if err := exact.check(netip.MustParseAddr(addr)); err == nil {
			t.Errorf("%s: opened by another address's entry", addr)
		}
	}
}
