package ingest

import (
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/agentbridge/bridge/store/secretbox"
)

// Credentials and signatures in forwarded headers
//
// A provider request's headers are copied into the envelope (http-<name>),
// so they reach the provider topic, the dead-letter topic and the
// dead-letter index in SQLite. Two kinds need care (issue 20, item 4):
//
//   - credentials for the endpoint itself (Authorization, Cookie, X-Api-Key,
//     *-Token, *-Secret, ...): no consumer needs them and a copied bridge.db
//     or events.bolt must not leak them, so they are never copied;
//     security.credential-headers adds names or patterns ("X-Acme-*");
//   - signatures (*-Signature*, *-Hmac*, and each hmac processor's
//     signature-header): the processor and consumers need them on the
//     provider topic, and a replayed dead letter must still verify, so in
//     dead letters their values are sealed with the data directory's secret
//     box (store/secretbox) and opened again only when replayed.
//
// A header a processor is configured to read (signature-header,
// delivery-id-header) is never treated as a credential.

// builtinCredentialHeaders are matched case-insensitively with path.Match.
var builtinCredentialHeaders = []string{
	"authorization", "proxy-authorization", "cookie", "set-cookie",
	"api-key", "apikey", "x-api-key", "x-apikey", "*-api-key", "*-apikey",
	"*-token", "*-secret", "*-password", "*-passwd", "*-credential", "*-credentials",
	"x-auth", "*-auth",
}

// builtinSignatureHeaders are matched like builtinCredentialHeaders.
var builtinSignatureHeaders = []string{"*signature*", "*hmac*"}

// sealedPrefix marks a sealed header value in a dead letter.
const sealedPrefix = "sealed:v1:"

// headerPolicy decides which provider headers an envelope carries and which
// are sealed in dead letters.
type headerPolicy struct {
	credential []string        // lower-case patterns
	signature  []string        // lower-case patterns
	readBy     map[string]bool // lower-case names processors read
	box        *secretbox.Box  // nil: signatures are dropped from dead letters

	// credOf remembers isCredential per header name as received: the
	// pattern match was a fifth of the acknowledgement's own CPU, and
	// providers send the same few names every time (BENCHMARKS.md,
	// "Webhook ingest acknowledgement"). Bounded: names are the client's.
	mu     sync.RWMutex
	credOf map[string]bool
}

// maxCachedHeaderNames bounds headerPolicy.credOf's entries and
// maxCachedHeaderName the length of a name it keeps (real providers' names
// are short; a request's header block may be 64 KiB).
const (
	maxCachedHeaderNames = 1024
	maxCachedHeaderName  = 64
)

func newHeaderPolicy(sec Security, procs map[string]ProcessorConfig, box *secretbox.Box) (*headerPolicy, error) {
	p := &headerPolicy{credential: append([]string(nil), builtinCredentialHeaders...), signature: builtinSignatureHeaders,
		readBy: map[string]bool{}, box: box}
	for _, name := range sec.CredentialHeaders {
		pat := strings.ToLower(strings.TrimSpace(name))
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			return nil, fmt.Errorf("security.credential-headers: %q is not a header name or pattern", name)
		}
		p.credential = append(p.credential, pat)
	}
	for _, pc := range procs {
		for _, h := range []string{pc.SignatureHeader, pc.DeliveryIDHeader} {
			if h != "" {
				p.readBy[strings.ToLower(h)] = true
			}
		}
		if pc.SignatureHeader != "" {
			p.signature = append(p.signature, strings.ToLower(pc.SignatureHeader))
		}
	}
	return p, nil
}

func matchAny(patterns []string, name string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
	}
	return false
}

// isCredentialCached is isCredential, remembered per name.
func (p *headerPolicy) isCredentialCached(name string) bool {
	p.mu.RLock()
	c, ok := p.credOf[name]
	p.mu.RUnlock()
	if ok {
		return c
	}
	c = p.isCredential(name)
	// Names are client-chosen: only short ones are remembered, and a full
	// cache starts over, so junk names neither pin memory nor lock out the
	// names that come later.
	if len(name) > maxCachedHeaderName {
		return c
	}
	p.mu.Lock()
	if p.credOf == nil {
		p.credOf = make(map[string]bool)
	}
	if len(p.credOf) >= maxCachedHeaderNames {
		clear(p.credOf)
	}
	p.credOf[name] = c
	p.mu.Unlock()
	return c
}

// isCredential reports whether header name (any case) carries a credential.
func (p *headerPolicy) isCredential(name string) bool {
	n := strings.ToLower(name)
	return !p.readBy[n] && matchAny(p.credential, n)
}

// isSignature reports whether header name (any case) carries a signature.
func (p *headerPolicy) isSignature(name string) bool {
	return matchAny(p.signature, strings.ToLower(name))
}

// forward selects the provider headers an envelope carries.
func (p *headerPolicy) forward(h http.Header) (http.Header, error) {
	out := make(http.Header, len(h))
	n := 0
	for k, vs := range h {
		if skippedHeaders[k] || p.isCredentialCached(k) {
			continue
		}
		for _, v := range vs {
			n += len(k) + len(v)
		}
		if n > maxForwardedHeader {
			return nil, errHeadersTooLarge
		}
		out[k] = vs
	}
	return out, nil
}

// sealAD binds a sealed value to its event and header, so it cannot be
// moved to another.
func sealAD(eventID, key string) string { return eventID + "\x00" + key }

// protectDeadLetter rewrites a dead letter's broker headers in place: any
// credential that reached them (a message that was not published by this
// version) is removed, and signature values are sealed, or removed when
// there is no secret box.
func (p *headerPolicy) protectDeadLetter(h map[string]string) error {
	eventID := h[hID]
	for k, v := range h {
		name, ok := strings.CutPrefix(k, hHTTPPrefix)
		if !ok || strings.HasPrefix(v, sealedPrefix) {
			continue
		}
		switch {
		case p.isCredential(name):
			delete(h, k)
		case p.isSignature(name):
			if p.box == nil {
				delete(h, k)
				continue
			}
			sealed, err := p.box.SealString(v, sealAD(eventID, k))
			if err != nil {
				return fmt.Errorf("ingest: seal dead letter header %s: %w", k, err)
			}
			h[k] = sealedPrefix + sealed
		}
	}
	return nil
}

// openSealed returns a dead letter's headers with sealed values opened, for
// republishing; a value that cannot be opened (another data directory's
// key) is left out, so verification fails visibly rather than with garbage.
func (p *headerPolicy) openSealed(h map[string]string, eventID string) (map[string]string, []string) {
	var lost []string
	for k, v := range h {
		sealed, ok := strings.CutPrefix(v, sealedPrefix)
		if !ok {
			continue
		}
		var plain string
		var err error
		if p.box != nil {
			plain, err = p.box.OpenString(sealed, sealAD(eventID, k))
		}
		if p.box == nil || err != nil {
			delete(h, k)
			lost = append(lost, k)
			continue
		}
		h[k] = plain
	}
	return h, lost
}

// redactSealed shows sealed values as "[sealed]" in API answers.
func redactSealed(h map[string]string) {
	for k, v := range h {
		if strings.HasPrefix(v, sealedPrefix) {
			h[k] = "[sealed]"
		}
	}
}
