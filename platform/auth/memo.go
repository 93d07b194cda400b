package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// defaultMemoEntries bounds the signature memo (about 100 bytes per entry).
const defaultMemoEntries = 4096

// sigMemo remembers which exact token bytes already passed signature
// verification under which key object. Clients reuse one access token for
// many requests, and an RSA-2048 verification alone costs about 30 µs, most
// of the per-request budget. A memo hit replaces only the RSA operation:
// parsing and every claim check (expiry included) still run on each call.
// An entry matches only the identical key object of the current key set, so
// a refresh that removes or replaces the key invalidates it, and entries
// are useless once the token has expired.
type sigMemo struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]memoEntry
	max     int
}

type memoEntry struct {
	key     any       // public key object that verified the token
	expires time.Time // token exp plus leeway
}

func newSigMemo(max int) *sigMemo {
	return &sigMemo{entries: make(map[[sha256.Size]byte]memoEntry), max: max}
}

// verified reports whether token hash h was verified with exactly key.
func (m *sigMemo) verified(h [sha256.Size]byte, key any) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	e, ok := m.entries[h]
	m.mu.Unlock()
	return ok && e.key == key
}

// add records a successful verification. When full, expired entries are
// dropped first; if that frees nothing, the memo starts over, which costs
// at most one extra verification per live token.
func (m *sigMemo) add(h [sha256.Size]byte, key any, expires, now time.Time) {
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
	m.entries[h] = memoEntry{key: key, expires: expires}
}

func (m *sigMemo) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}
