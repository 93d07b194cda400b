package auth

import (
	"crypto/sha256"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// defaultMemoEntries bounds the signature memo's entries; memoClaimsMax
// bounds what one keeps: the claims of a token whose payload is larger are
// not kept (its next use is checked in full), so the memo holds at most
// about 4,096 × (4 KiB of claims + 100 bytes).
const (
	defaultMemoEntries = 4096
	memoClaimsMax      = 4 << 10
)

// sigMemo remembers which exact token bytes already passed verification
// under which key object, with the claims they carried. Clients reuse one
// access token for many requests, and an RSA-2048 verification alone costs
// about 30 µs, most of the per-request budget; parsing the token and
// checking its claims again cost most of the rest (BENCHMARKS.md, "Runs/s:
// CPU per run"). A memo hit replaces the RSA operation and the parse: the
// checks that depend on the time (exp, nbf, iat, with the leeway) and the
// key set (the key is still published for the token's kid and alg) run on
// each call; the others depend only on the token's bytes and the
// verifier's fixed configuration. An entry matches only the identical key
// object of the current key set, so a refresh that removes or replaces
// the key invalidates it, and entries are useless once the token has
// expired.
type sigMemo struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]memoEntry
	max     int
}

type memoEntry struct {
	key     any       // public key object that verified the token
	expires time.Time // token exp plus leeway
	// What the token's bytes said, as the full check found it (nil: only
	// the signature is known).
	claims *Claims
	st     *issuerState
	kid    string
	alg    jose.SignatureAlgorithm
}

func newSigMemo(max int) *sigMemo {
	return &sigMemo{entries: make(map[[sha256.Size]byte]memoEntry), max: max}
}

// lookup answers the entry of token hash h.
func (m *sigMemo) lookup(h [sha256.Size]byte) (memoEntry, bool) {
	if m == nil {
		return memoEntry{}, false
	}
	m.mu.Lock()
	e, ok := m.entries[h]
	m.mu.Unlock()
	return e, ok
}

// verified reports whether token hash h was verified with exactly key.
func (m *sigMemo) verified(h [sha256.Size]byte, key any) bool {
	e, ok := m.lookup(h)
	return ok && e.key == key
}

// add records a successful verification with key, until expires.
func (m *sigMemo) add(h [sha256.Size]byte, key any, expires, now time.Time) {
	m.put(h, memoEntry{key: key, expires: expires}, now)
}

// put records a successful verification (e.expires: the token's exp plus
// the leeway). When full, expired entries are dropped first; if that
// frees nothing, the memo starts over, which costs at most one extra
// verification per live token.
func (m *sigMemo) put(h [sha256.Size]byte, e memoEntry, now time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) >= m.max {
		for k, e := range m.entries {
			if !now.Before(e.expires) {
				delete(m.entries, k)
			}
		}
		if len(m.entries) >= m.max {
			clear(m.entries)
		}
	}
	m.entries[h] = e
}

func (m *sigMemo) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}
