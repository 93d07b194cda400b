// Package boltcompact gives back the space of a bbolt file (events.bolt)
// that retention has freed. bbolt reuses freed pages but never shortens its
// file, so the daemon compacts it when it starts, before anything opens it
// (docs/retention.md): the live data is copied into a new file that
// replaces the old one by an atomic rename, so a crash at any point leaves
// either the old file or the complete new one.
package boltcompact

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Suffix names the copy being written next to the file.
const Suffix = ".compact"

// Options decide whether File compacts.
type Options struct {
	// MinFreeBytes: compact only when at least this many bytes of the file
	// are free pages. Zero or less never compacts.
	MinFreeBytes int64
	// MinFreeFraction: and when at least this fraction of the file is free.
	// Default 0.25.
	MinFreeFraction float64
	// Timeout is how long to wait for the file's lock (another process
	// using it). Default 1s.
	Timeout time.Duration
	// TxMaxSize bounds the bytes copied per transaction. Default 64 MiB.
	TxMaxSize int64

	// beforeSwap, for tests, runs after the copy is synced and before the
	// rename; an error stops there, like a crash would.
	beforeSwap func() error
}

// Result says what File did.
type Result struct {
	Compacted bool
	// Before and After are the file's sizes; Free is what was free before.
	Before, After, Free int64
}

// File compacts the bbolt file at path if enough of it is free, and removes
// a copy left by an interrupted compaction. A missing file is not an error.
// The caller must not have the file open: File takes bbolt's lock on it.
func File(ctx context.Context, path string, opts Options) (Result, error) {
	if opts.MinFreeFraction <= 0 {
		opts.MinFreeFraction = 0.25
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.TxMaxSize <= 0 {
		opts.TxMaxSize = 64 << 20
	}
	tmp := path + Suffix
	// A copy left by a crash is incomplete or was never renamed: the file
	// at path is the real one either way.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Result{}, fmt.Errorf("compact %s: remove stale copy: %w", path, err)
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || opts.MinFreeBytes <= 0 {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("compact %s: %w", path, err)
	}
	res := Result{Before: st.Size(), After: st.Size()}
	src, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout})
	if err != nil {
		return res, fmt.Errorf("compact %s: open: %w", path, err)
	}
	defer src.Close()
	res.Free = freeBytes(src)
	if res.Free < opts.MinFreeBytes || float64(res.Free) < opts.MinFreeFraction*float64(res.Before) {
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if err := copyLive(src, tmp, opts.TxMaxSize); err != nil {
		_ = os.Remove(tmp)
		return res, fmt.Errorf("compact %s: %w", path, err)
	}
	if opts.beforeSwap != nil {
		if err := opts.beforeSwap(); err != nil {
			return res, err
		}
	}
	// The rename happens while src still holds the lock on the old file, so
	// no other process can be writing to it. A process that opened the old
	// file and waits for its lock must check that it still is the file at
	// path once it has the lock (see SameFile).
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return res, fmt.Errorf("compact %s: replace: %w", path, err)
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return res, fmt.Errorf("compact %s: %w", path, err)
	}
	if st, err := os.Stat(path); err == nil {
		res.After = st.Size()
	}
	res.Compacted = true
	return res, nil
}

// freeBytes is what compaction would give back: the free and pending pages.
// The file's tail beyond the last page is bbolt's allocation slack, which a
// new file has too, so it does not count.
func freeBytes(db *bolt.DB) int64 {
	s := db.Stats() // FreeAlloc is only computed by write transactions
	return int64(s.FreePageN+s.PendingPageN) * int64(db.Info().PageSize)
}

// copyLive writes src's live data into a new file at tmp and syncs it.
func copyLive(src *bolt.DB, tmp string, txMaxSize int64) error {
	// NoSync while copying: one sync of the whole file at the end is what
	// makes it durable before the rename.
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		return fmt.Errorf("create copy: %w", err)
	}
	if err := bolt.Compact(dst, src, txMaxSize); err != nil {
		dst.Close()
		return fmt.Errorf("copy: %w", err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return fmt.Errorf("sync copy: %w", err)
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("close copy: %w", err)
	}
	// fdatasync above covers the data; a full fsync also covers the size
	// and the file's metadata before it takes the old file's name.
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync copy: %w", err)
	}
	return nil
}

// Open opens the bbolt file at path like bolt.Open, making sure the file it
// locked is still the one at path: a compaction by another process may have
// renamed a new file over it while Open waited for the lock, and writing to
// the replaced file would lose everything. It then opens again.
func Open(path string, mode os.FileMode, opts *bolt.Options) (*bolt.DB, error) {
	for attempt := 0; ; attempt++ {
		before, err := os.Stat(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		db, err := bolt.Open(path, mode, opts)
		if err != nil {
			return nil, err
		}
		after, err := os.Stat(path)
		if err != nil {
			db.Close()
			return nil, err
		}
		if before == nil || os.SameFile(before, after) {
			return db, nil
		}
		db.Close()
		if attempt == 2 {
			return nil, fmt.Errorf("open %s: the file was replaced while opening it, three times", path)
		}
	}
}

// SyncDir makes a file created or renamed in dir durable. Where a
// directory cannot be synced it does nothing: on Windows (opening one for
// writing fails with ERROR_ACCESS_DENIED; NTFS journals its renames), and
// on filesystems that answer the sync with EINVAL or ENOTSUP.
func SyncDir(dir string) error { return syncDirOn(runtime.GOOS, dir) }

func syncDirOn(goos, dir string) error {
	if goos == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !dirSyncUnsupported(err) {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// dirSyncUnsupported reports a directory sync the filesystem does not do.
func dirSyncUnsupported(err error) bool {
	return errors.Is(err, errors.ErrUnsupported) || errors.Is(err, syscall.EINVAL)
}
