package ring

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"
)

// FuzzRing drives a ring with a byte-coded sequence of appends, reads and
// restarts and checks it against a model: ReadAfter returns exactly the
// retained ids after the cursor, in order, or ErrExpired exactly when the
// cursor is older than oldest-1.
func FuzzRing(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{2, 0, 4, 1, 0, 5, 1, 3, 2})
	f.Add([]byte{0, 0, 1, 0, 2, 1, 0, 9, 2, 0, 0, 3, 1, 1, 1})
	f.Add([]byte{7, 0, 4, 0, 4, 0, 4, 2, 1, 1, 2, 3, 0, 9, 1, 2, 7})
	f.Add([]byte{3, 3, 3, 0, 1, 0, 1, 2, 0, 1, 0, 0, 1, 1, 250})
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) == 0 || len(prog) > 256 {
			return
		}
		next := func() byte {
			if len(prog) == 0 {
				return 0
			}
			b := prog[0]
			prog = prog[1:]
			return b
		}
		path := filepath.Join(t.TempDir(), "events.bolt")
		// Durability is covered elsewhere; skipping fsync keeps fuzzing fast.
		opts := &bbolt.Options{NoSync: true}
		db, err := bbolt.Open(path, 0o600, opts)
		if err != nil {
			t.Fatal(err)
		}
		capacity := 1 + int(next()%8)
		r, err := Open(db, "fuzz", capacity)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { r.Close(); db.Close() }()

		var newest uint64
		oldest := uint64(1) // first retained id; newest+1 when nothing is retained
		trim := func() {
			if newest > uint64(capacity) {
				oldest = max(oldest, newest-uint64(capacity)+1)
			}
		}
		for len(prog) > 0 {
			switch next() % 4 {
			case 0: // append k payloads in one call
				k := 1 + int(next()%6)
				ps := make([][]byte, k)
				for i := range ps {
					ps[i] = fmt.Appendf(nil, "p%d", newest+uint64(i)+1)
				}
				ids, err := r.Append(context.Background(), ps...)
				if err != nil {
					t.Fatalf("append: %v", err)
				}
				for i, id := range ids {
					if id != newest+uint64(i)+1 {
						t.Fatalf("append ids %v, want from %d", ids, newest+1)
					}
				}
				if len(ids) != k {
					t.Fatalf("append returned %d ids for %d payloads", len(ids), k)
				}
				newest += uint64(k)
				trim()
			case 1: // read after a cursor near the retained window
				after := uint64(next()) % (newest + 3)
				limit := 1 + int(next()%12)
				es, err := r.ReadAfter(after, limit)
				if after+1 < oldest {
					if !errors.Is(err, ErrExpired) {
						t.Fatalf("ReadAfter(%d) with oldest %d: err %v, want ErrExpired", after, oldest, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("ReadAfter(%d, %d): %v", after, limit, err)
				}
				var want []uint64
				for id := after + 1; id <= newest && len(want) < limit; id++ {
					want = append(want, id)
				}
				if got := entryIDs(es); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("ReadAfter(%d, %d) = %v, want %v (oldest %d newest %d)", after, limit, got, want, oldest, newest)
				}
				for _, e := range es {
					if string(e.Data) != fmt.Sprintf("p%d", e.ID) {
						t.Fatalf("entry %d holds %q", e.ID, e.Data)
					}
				}
			case 2: // restart, possibly with another capacity
				capacity = 1 + int(next()%8)
				r.Close()
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if db, err = bbolt.Open(path, 0o600, opts); err != nil {
					t.Fatal(err)
				}
				if r, err = Open(db, "fuzz", capacity); err != nil {
					t.Fatal(err)
				}
				trim()
			case 3: // bounds
				wantOldest := oldest
				if oldest > newest {
					wantOldest = 0
				}
				if r.Oldest() != wantOldest || r.Newest() != newest {
					t.Fatalf("bounds [%d, %d], want [%d, %d]", r.Oldest(), r.Newest(), wantOldest, newest)
				}
			}
		}
	})
}
