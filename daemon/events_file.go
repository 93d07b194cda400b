package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentbridge/bridge/store/boltcompact"
	"github.com/agentbridge/bridge/store/broker"
)

// openEvents compacts events.bolt when enough of it is free
// (events.compact-min-free-mib, docs/retention.md) and opens it. bbolt
// reuses the pages retention frees but never shortens its file; copying
// the live data into a new file is the only way to give the space back,
// and it can only happen while nothing has the file open.
func (d *Daemon) openEvents(ctx context.Context, opts *bolt.Options) (*bolt.DB, error) {
	path := filepath.Join(d.opts.DataDir, EventsFile)
	start := time.Now()
	res, err := boltcompact.File(ctx, path, boltcompact.Options{
		MinFreeBytes: d.opts.Config.Events.CompactMinFreeMiB << 20,
		Timeout:      opts.Timeout,
	})
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		// Another daemon holds the file; opening it says so.
	case err != nil:
		// The file is intact (compaction replaces it only when the copy is
		// complete); opening it reports a held lock or corruption properly.
		d.log.Warn("events.bolt: compaction failed; continuing with the file as it is", "err", err)
	case res.Compacted:
		d.log.Info("events.bolt: compacted", "bytes_before", res.Before, "bytes_after", res.After, "took", time.Since(start).Round(time.Millisecond))
	}
	db, err := boltcompact.Open(path, 0o600, opts)
	if err != nil {
		return nil, boltOpenError(d.opts.DataDir, err)
	}
	return db, nil
}

// brokerRetention turns the events section into the broker's bounds.
func brokerRetention(e Events) broker.BoltOptions {
	return broker.BoltOptions{
		RetentionMaxAge:      e.BrokerMaxAge.D(),
		RetentionMaxMessages: e.BrokerMaxMessages,
		RetentionMaxBytes:    e.BrokerMaxMiB << 20,
	}
}

// ErrInUse means the data directory's lock is held: a daemon runs on it,
// or bridge migrate works on it.
var ErrInUse = errors.New("a bridge daemon (or bridge migrate) is using this data directory")

// LockDataDir takes, for offline work on dir's files (bridge migrate), the
// lock a running daemon holds for its whole life: events.bolt's. It answers
// ErrInUse while a daemon holds it; until release, a daemon that starts on
// dir fails as when another daemon runs. An existing events.bolt is opened
// read-only (a shared lock, nothing written); a missing or empty one is
// created as the daemon would create it, under the exclusive lock. A file
// bbolt refuses as damaged cannot be served (serve says why) and has
// nothing to lock.
func LockDataDir(dir string) (release func() error, err error) {
	path := filepath.Join(dir, EventsFile)
	opts := &bolt.Options{ReadOnly: true, Timeout: 300 * time.Millisecond}
	if fi, err := os.Stat(path); errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0) {
		opts.ReadOnly = false
	}
	// boltcompact.Open, not bolt.Open: a starting daemon may replace the
	// file (compaction) while this waits for its lock; it then opens the
	// new file, which the daemon holds.
	db, err := boltcompact.Open(path, 0o600, opts)
	switch {
	case err == nil:
		return db.Close, nil
	case errors.Is(err, bolt.ErrTimeout):
		return nil, ErrInUse
	case errors.Is(err, bolt.ErrInvalid), errors.Is(err, bolt.ErrVersionMismatch), errors.Is(err, bolt.ErrChecksum):
		return func() error { return nil }, nil // damaged: no daemon can have it open
	default:
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
}
