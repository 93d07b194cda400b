package daemon

import (
	"log/slog"
	"net/http"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
	"github.com/agentbridge/bridge/store/secretbox"
)

// Deps is what the daemon hands each subsystem's constructor. Subsystems take
// the fields they need; they never reach into each other's tables.
type Deps struct {
	DataDir string
	DB      *store.DB
	// Bolt is events.bolt; subsystems use it only through store/ring and
	// store/broker, each in buckets of its own.
	Bolt   *bolt.DB
	Broker broker.Broker
	// Box encrypts secrets at rest with the key from the OS keychain (or a
	// 0600 key file where there is none).
	Box    *secretbox.Box
	Config *config.File
	Logger *slog.Logger
	// IsOwner reports whether a request carries the owner token
	// (Authorization: Bearer), compared by hash in constant time.
	IsOwner   func(r *http.Request) bool
	OwnerHash [32]byte
	Build     BuildInfo
	// EventsCapacity sizes the bridge's event ring (events.capacity).
	EventsCapacity int
	// BridgeAddr and ServicesAddr are the listeners' actual addresses.
	BridgeAddr, ServicesAddr string
}

// BearerToken extracts the token of an "Authorization: Bearer" header. A
// request with two Authorization headers has none: which one was meant is a
// guess (surfaces answer their own 400 first, see httpx.SingleHeader).
func BearerToken(r *http.Request) (string, bool) {
	h, err := httpx.SingleHeader(r.Header, "Authorization")
	if err != nil {
		return "", false
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

func (d *Daemon) isOwner(r *http.Request) bool {
	tok, ok := BearerToken(r)
	if !ok || !WellFormedToken(tok) {
		return false
	}
	return HashEqual(TokenHash(tok), d.ownerHash)
}
