package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// Limits of sign-in (docs/console.md, "Sign-in").
const (
	// CodeTTL is how long a code from `bridge console` may be exchanged.
	CodeTTL = 60 * time.Second
	// SessionIdle ends a session nobody used for this long; SessionMax
	// ends any session this long after sign-in.
	SessionIdle = 12 * time.Hour
	SessionMax  = 7 * 24 * time.Hour
	// maxCodes and maxSessions bound the in-memory tables: the oldest
	// entry gives way to a new one.
	maxCodes    = 64
	maxSessions = 256
)

// session is a signed-in browser. Sessions live in memory only, so a
// daemon restart signs every browser out.
type session struct {
	csrf      string
	created   time.Time
	lastSeen  time.Time
	expiresAt time.Time
	// done is closed when the session ends, which ends its open streams.
	done chan struct{}
}

// authority holds the pending sign-in codes and the sessions, both by the
// SHA-256 of their secret: a memory dump shows neither.
type authority struct {
	mu       sync.Mutex
	now      func() time.Time
	codes    map[[32]byte]time.Time // hash -> expiry
	sessions map[[32]byte]*session
}

func newAuthority(now func() time.Time) *authority {
	return &authority{now: now, codes: map[[32]byte]time.Time{}, sessions: map[[32]byte]*session{}}
}

// randomSecret returns 256 random bits in base64url.
func randomSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func hashOf(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// newCode issues a single-use sign-in code valid for CodeTTL.
func (a *authority) newCode() (string, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	a.expireLocked(now)
	if len(a.codes) >= maxCodes {
		var oldest [32]byte
		var t time.Time
		for h, exp := range a.codes {
			if t.IsZero() || exp.Before(t) {
				oldest, t = h, exp
			}
		}
		delete(a.codes, oldest)
	}
	code := randomSecret()
	exp := now.Add(CodeTTL)
	a.codes[hashOf(code)] = exp
	return code, exp
}

// redeem consumes a code: true once, while it is valid. A code is removed
// by its first use whatever the outcome, so a guessed or replayed code
// never works twice.
func (a *authority) redeem(code string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := hashOf(code)
	exp, ok := a.codes[h]
	if !ok {
		return false
	}
	delete(a.codes, h)
	return a.now().Before(exp)
}

// open starts a session and returns its id (the cookie) and CSRF token.
func (a *authority) open() (id string, s *session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	a.expireLocked(now)
	if len(a.sessions) >= maxSessions {
		var oldest [32]byte
		var t time.Time
		for h, s := range a.sessions {
			if t.IsZero() || s.lastSeen.Before(t) {
				oldest, t = h, s.lastSeen
			}
		}
		a.dropLocked(oldest)
	}
	id = randomSecret()
	s = &session{csrf: randomSecret(), created: now, lastSeen: now, expiresAt: now.Add(SessionMax), done: make(chan struct{})}
	a.sessions[hashOf(id)] = s
	return id, s
}

// lookup returns the live session of id and marks it used.
func (a *authority) lookup(id string) (session, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[hashOf(id)]
	if !ok {
		return session{}, false
	}
	now := a.now()
	if !now.Before(s.expiresAt) || !now.Before(s.lastSeen.Add(SessionIdle)) {
		a.dropLocked(hashOf(id))
		return session{}, false
	}
	s.lastSeen = now
	return *s, true
}

// end signs one session out.
func (a *authority) end(id string) {
	a.mu.Lock()
	a.dropLocked(hashOf(id))
	a.mu.Unlock()
}

// endAll signs every session out and drops pending codes.
func (a *authority) endAll() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.sessions)
	for h := range a.sessions {
		a.dropLocked(h)
	}
	clear(a.codes)
	return n
}

// dropLocked ends a session: removed, and its streams told to close.
func (a *authority) dropLocked(h [32]byte) {
	if s, ok := a.sessions[h]; ok {
		close(s.done)
		delete(a.sessions, h)
	}
}

func (a *authority) expireLocked(now time.Time) {
	for h, exp := range a.codes {
		if !now.Before(exp) {
			delete(a.codes, h)
		}
	}
	for h, s := range a.sessions {
		if !now.Before(s.expiresAt) || !now.Before(s.lastSeen.Add(SessionIdle)) {
			a.dropLocked(h)
		}
	}
}

// sameSecret compares two secrets in constant time.
func sameSecret(a, b string) bool {
	ha, hb := hashOf(a), hashOf(b)
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}
