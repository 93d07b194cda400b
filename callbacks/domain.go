package callbacks

import (
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"
)

// AuthorizedDomain is one entry of the allow-list of hosts callbacks may
// target. Domain is a host name (or an IP literal); it matches a URL's host
// exactly (case-insensitively, any port), and also every subdomain when
// IncludeSubdomains is set.
type AuthorizedDomain struct {
	ID                string    `json:"id" schema:"format=uuid"`
	Domain            string    `json:"domain" doc:"host name or IP literal, lower-case, without port or scheme"`
	IncludeSubdomains bool      `json:"includeSubdomains"`
	Description       string    `json:"description"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
}

// DomainInput is the body of create and update (PUT replaces every field).
type DomainInput struct {
	Domain            string  `json:"domain" schema:"minLength=1,maxLength=253" doc:"host name (a-z, 0-9, '-' labels; punycode for IDNs) or IP literal"`
	IncludeSubdomains *bool   `json:"includeSubdomains,omitempty" doc:"also authorize every subdomain (default false)"`
	Description       *string `json:"description,omitempty" schema:"maxLength=500"`
}

// Bounds of authorized-domain fields.
const (
	maxDomainLen      = 253
	maxDescriptionLen = 500
)

func (in DomainInput) normalize() (AuthorizedDomain, error) {
	var v validation
	d := AuthorizedDomain{Domain: normalizeHost(in.Domain)}
	if err := validHost(d.Domain); err != "" {
		v.add("domain", "%s", err)
	}
	if in.IncludeSubdomains != nil {
		d.IncludeSubdomains = *in.IncludeSubdomains
	}
	if in.Description != nil {
		d.Description = strings.TrimSpace(*in.Description)
		v.check(utf8.ValidString(d.Description), "description", "must be valid UTF-8")
		v.check(utf8.RuneCountInString(d.Description) <= maxDescriptionLen, "description", "must be at most %d characters", maxDescriptionLen)
	}
	if _, err := netip.ParseAddr(d.Domain); err == nil && d.IncludeSubdomains {
		v.add("includeSubdomains", "an IP address has no subdomains")
	}
	return d, v.err()
}

// normalizeHost lower-cases a host and strips IPv6 brackets and a trailing dot.
func normalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	return strings.TrimSuffix(h, ".")
}

// validHost returns why h (normalized) is not a host name or IP literal, or "".
func validHost(h string) string {
	if h == "" {
		return "is required"
	}
	if len(h) > maxDomainLen {
		return "must be at most 253 characters"
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "an IPv6 zone is not allowed"
		}
		return ""
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return "each dot-separated label must be 1 to 63 characters"
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return "a label cannot start or end with '-'"
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "must be a host name of letters, digits and '-' (use punycode for international names) or an IP address, without scheme, port or path"
			}
		}
	}
	return ""
}

// authorizes reports whether d allows delivering to host (normalized).
func (d AuthorizedDomain) authorizes(host string) bool {
	if host == d.Domain {
		return true
	}
	return d.IncludeSubdomains && strings.HasSuffix(host, "."+d.Domain)
}

// hostAuthorized reports whether any of domains authorizes host.
func hostAuthorized(domains []AuthorizedDomain, host string) bool {
	for _, d := range domains {
		if d.authorizes(host) {
			return true
		}
	}
	return false
}
