package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
	bolt "go.etcd.io/bbolt"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/store/broker"
)

// TestServeCompactsEventsFile: space freed in events.bolt is given back
// when the daemon starts (events.compact-min-free-mib), and the broker's
// messages and offsets survive the compaction.
func TestServeCompactsEventsFile(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := t.TempDir()
	d := start(t, dir)
	var msgs []broker.Message
	for i := range 50 {
		msgs = append(msgs, broker.Message{Topic: "kept", Value: fmt.Appendf(nil, "m%d", i)})
	}
	is.NoErr(d.Broker.Publish(t.Context(), msgs...))
	is.NoErr(d.Shutdown())

	// 24 MiB written and deleted again: what retention leaves behind.
	path := filepath.Join(dir, daemon.EventsFile)
	db, err := bolt.Open(path, 0o600, nil)
	is.NoErr(err)
	val := bytes.Repeat([]byte{'x'}, 1024)
	is.NoErr(db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("scratch"))
		if err != nil {
			return err
		}
		for i := range 24 * 1024 {
			if err := b.Put(fmt.Appendf(nil, "%08d", i), val); err != nil {
				return err
			}
		}
		return nil
	}))
	is.NoErr(db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("scratch")) }))
	is.NoErr(db.Close())
	before, err := os.Stat(path)
	is.NoErr(err)

	// Off: nothing changes.
	cfg := testConfig()
	cfg.Events.CompactMinFreeMiB = 0
	d2, err := daemon.Start(context.Background(), daemon.Options{DataDir: dir, Config: cfg, Build: daemon.BuildInfo{Version: "test"}, DisableKeyring: true})
	is.NoErr(err)
	is.NoErr(d2.Shutdown())
	same, err := os.Stat(path)
	is.NoErr(err)
	is.Equal(same.Size(), before.Size())

	cfg.Events.CompactMinFreeMiB = 8
	d3, err := daemon.Start(context.Background(), daemon.Options{DataDir: dir, Config: cfg, Build: daemon.BuildInfo{Version: "test"}, DisableKeyring: true})
	is.NoErr(err)
	defer d3.Shutdown()
	after, err := os.Stat(path)
	is.NoErr(err)
	is.True(after.Size() < before.Size()/2)
	r := d3.Broker.(broker.Reader)
	got, err := r.Read(t.Context(), "kept", 0, 100)
	is.NoErr(err)
	is.Equal(len(got), 50)
	is.Equal(string(got[49].Value), "m49")
	is.NoErr(d3.Broker.Publish(t.Context(), broker.Message{Topic: "kept", Value: []byte("next")}))
	next, err := r.Latest(t.Context(), "kept")
	is.NoErr(err)
	is.Equal(next, int64(51)) // offsets continue
}
