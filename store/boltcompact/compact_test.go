package boltcompact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	bolt "go.etcd.io/bbolt"
)

// fill writes n values of size bytes into bucket "topic" (whose sequence
// it sets to n, as the broker's offsets) and deletes all but every keep-th.
func fill(t *testing.T, path string, n, size, keep int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	val := bytes.Repeat([]byte{'v'}, size)
	for start := 0; start < n; start += 1000 {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("topic"))
			if err != nil {
				return err
			}
			for i := start; i < min(start+1000, n); i++ {
				if err := b.Put(key(i), val); err != nil {
					return err
				}
			}
			return b.SetSequence(uint64(min(start+1000, n)))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("topic"))
		for i := range n {
			if i%keep != 0 {
				if err := b.Delete(key(i)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func key(i int) []byte { return fmt.Appendf(nil, "%08d", i) }

// check opens path and verifies it holds exactly what fill kept.
func check(t *testing.T, path string, n, size, keep int) {
	t.Helper()
	db, err := Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return fmt.Errorf("inconsistent: %w", err)
		}
		b := tx.Bucket([]byte("topic"))
		if b == nil {
			return errors.New("bucket lost")
		}
		if b.Sequence() != uint64(n) {
			return fmt.Errorf("sequence %d, want %d", b.Sequence(), n)
		}
		count := 0
		err := b.ForEach(func(k, v []byte) error {
			var i int
			if _, err := fmt.Sscanf(string(k), "%d", &i); err != nil || i%keep != 0 || len(v) != size {
				return fmt.Errorf("unexpected entry %q (%d bytes)", k, len(v))
			}
			count++
			return nil
		})
		if err != nil {
			return err
		}
		if want := (n + keep - 1) / keep; count != want {
			return fmt.Errorf("%d entries, want %d", count, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func TestCompactGivesSpaceBack(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "events.bolt")
	fill(t, path, 20_000, 1024, 10) // ~20 MiB written, a tenth kept
	before := size(t, path)
	res, err := File(t.Context(), path, Options{MinFreeBytes: 1 << 20})
	is.NoErr(err)
	is.True(res.Compacted)
	is.Equal(res.Before, before)
	is.True(res.Free > before/2)
	is.Equal(res.After, size(t, path))
	is.True(res.After < before/4) // the file really shrank
	check(t, path, 20_000, 1024, 10)
	_, err = os.Stat(path + Suffix)
	is.True(errors.Is(err, os.ErrNotExist))

	// Compacting again finds nothing worth it.
	res, err = File(t.Context(), path, Options{MinFreeBytes: 1 << 20})
	is.NoErr(err)
	is.True(!res.Compacted)
}

func TestCompactThresholds(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "events.bolt")
	fill(t, path, 4000, 1024, 2) // half deleted: ~2 MiB free of ~4+
	before := size(t, path)
	for _, o := range []Options{
		{MinFreeBytes: 0},                              // off
		{MinFreeBytes: 64 << 20},                       // more than is free
		{MinFreeBytes: 1 << 10, MinFreeFraction: 0.95}, // not that large a share
	} {
		res, err := File(t.Context(), path, o)
		is.NoErr(err)
		is.True(!res.Compacted)
		is.Equal(size(t, path), before)
	}
	res, err := File(t.Context(), path, Options{MinFreeBytes: 1 << 10})
	is.NoErr(err)
	is.True(res.Compacted)
	check(t, path, 4000, 1024, 2)
	// A missing file is nothing to do.
	res, err = File(t.Context(), filepath.Join(t.TempDir(), "none.bolt"), Options{MinFreeBytes: 1})
	is.NoErr(err)
	is.True(!res.Compacted)
}

func TestCompactWaitsForTheLock(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "events.bolt")
	fill(t, path, 2000, 1024, 10)
	held, err := bolt.Open(path, 0o600, nil)
	is.NoErr(err)
	defer held.Close()
	_, err = File(t.Context(), path, Options{MinFreeBytes: 1, Timeout: 50 * time.Millisecond})
	is.True(errors.Is(err, bolt.ErrTimeout)) // another process has it: hands off
}

// An interrupted swap (the copy is written, the rename never happens)
// leaves the original as it was; the next run deletes the stale copy.
func TestInterruptedSwapLeavesOriginal(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "events.bolt")
	fill(t, path, 10_000, 512, 10)
	before := size(t, path)
	crash := errors.New("crash before rename")
	_, err := File(t.Context(), path, Options{MinFreeBytes: 1 << 10, beforeSwap: func() error { return crash }})
	is.True(errors.Is(err, crash))
	is.Equal(size(t, path), before)
	_, err = os.Stat(path + Suffix)
	is.NoErr(err) // the copy is left behind, as a crash would leave it
	check(t, path, 10_000, 512, 10)

	// A truncated copy (a crash mid-copy) is also just deleted.
	is.NoErr(os.Truncate(path+Suffix, 4096))
	res, err := File(t.Context(), path, Options{MinFreeBytes: 1 << 10})
	is.NoErr(err)
	is.True(res.Compacted)
	check(t, path, 10_000, 512, 10)
	_, err = os.Stat(path + Suffix)
	is.True(errors.Is(err, os.ErrNotExist))
}

// Open notices a file replaced while it waited for the old one's lock and
// opens the new one.
func TestOpenReopensReplacedFile(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "events.bolt")
	fill(t, path, 100, 10, 1)
	held, err := bolt.Open(path, 0o600, nil)
	is.NoErr(err)
	opened := make(chan *bolt.DB, 1)
	go func() {
		db, err := Open(path, 0o600, &bolt.Options{Timeout: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		opened <- db
	}()
	time.Sleep(100 * time.Millisecond) // Open is waiting for held's lock
	other := filepath.Join(dir, "new.bolt")
	fill(t, other, 7, 10, 1)
	is.NoErr(os.Rename(other, path))
	is.NoErr(held.Close())
	db := <-opened
	is.True(db != nil)
	defer db.Close()
	is.NoErr(db.View(func(tx *bolt.Tx) error {
		is.Equal(tx.Bucket([]byte("topic")).Sequence(), uint64(7)) // the new file
		return nil
	}))
}

// crashChildEnv names the file a re-executed test binary compacts.
const crashChildEnv = "BOLTCOMPACT_CRASH_CHILD"

// TestSIGKILLDuringCompaction kills a child process compacting a file at
// several moments (mid-copy, around the rename) and checks that the file
// is always consistent, holds all the data, and can be compacted again.
func TestSIGKILLDuringCompaction(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		fmt.Println("start")
		if _, err := File(context.Background(), path, Options{MinFreeBytes: 1, TxMaxSize: 64 << 10}); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("done")
		os.Exit(0)
	}
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL on windows")
	}
	is := is.New(t)
	const n, sz, keep = 10_000, 1024, 5
	template := filepath.Join(t.TempDir(), "template.bolt")
	fill(t, template, n, sz, keep)
	data, err := os.ReadFile(template)
	is.NoErr(err)
	outcomes := map[bool]int{} // compacted by the time of the kill?
	for _, delay := range []time.Duration{0, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
		20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond, 2 * time.Second} {
		path := filepath.Join(t.TempDir(), "events.bolt")
		is.NoErr(os.WriteFile(path, data, 0o600))
		cmd := exec.Command(os.Args[0], "-test.run=^TestSIGKILLDuringCompaction$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		var out bytes.Buffer
		cmd.Stdout = &out
		is.NoErr(cmd.Start())
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		compacted := size(t, path) < int64(len(data))
		outcomes[compacted]++
		check(t, path, n, sz, keep)
		res, err := File(t.Context(), path, Options{MinFreeBytes: 1 << 10})
		is.NoErr(err)
		is.Equal(res.Compacted, !compacted)
		check(t, path, n, sz, keep)
		_, err = os.Stat(path + Suffix)
		is.True(errors.Is(err, os.ErrNotExist))
	}
	t.Logf("killed before the swap %d times, after it %d times", outcomes[false], outcomes[true])
	is.True(outcomes[true] > 0) // the 2s child finished
}

// A directory that cannot be synced is not an error: Windows refuses to
// open one for syncing, some filesystems answer EINVAL or ENOTSUP.
func TestSyncDirWhereUnsupported(t *testing.T) {
	is := is.New(t)
	is.NoErr(SyncDir(t.TempDir()))
	is.NoErr(syncDirOn("windows", filepath.Join(t.TempDir(), "missing"))) // not even opened
	is.True(syncDirOn("linux", filepath.Join(t.TempDir(), "missing")) != nil)
	for _, err := range []error{syscall.EINVAL, syscall.ENOTSUP, errors.ErrUnsupported, &os.PathError{Op: "sync", Path: "d", Err: syscall.EINVAL}} {
		is.True(dirSyncUnsupported(err))
	}
	is.True(!dirSyncUnsupported(syscall.EIO))
}
