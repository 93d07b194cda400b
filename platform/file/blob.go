package file

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// blobs keeps the bytes of files under a directory of the data directory
// (files/): uploads/<file id>.part while chunks arrive, then
// blobs/<first 2 hex>/<sha256>, shared by every file with that content.
type blobs struct{ root string }

var (
	// errShortChunk / errLongChunk: the body is not the chunk's length.
	errShortChunk = errors.New("file: the chunk is shorter than its length")
	errLongChunk  = errors.New("file: the chunk is longer than its length")
	// errDigest: the stored bytes do not have the declared digest.
	errDigest = errors.New("file: the content does not have the declared SHA-256")
	// errPartMissing: an upload's bytes are gone (never the case unless the
	// data directory was tampered with).
	errPartMissing = errors.New("file: the upload's bytes are missing")
)

func (b blobs) uploads() string { return filepath.Join(b.root, "uploads") }
func (b blobs) store() string   { return filepath.Join(b.root, "blobs") }

// init creates the directories.
func (b blobs) init() error {
	for _, d := range []string{b.uploads(), b.store()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("file: create %s: %w", d, err)
		}
	}
	return nil
}

func (b blobs) partPath(id string) string { return filepath.Join(b.uploads(), id+".part") }

func (b blobs) blobPath(digest string) string {
	return filepath.Join(b.store(), digest[:2], digest)
}

// syncDir makes a directory's entries (a created or renamed file) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("file: sync %s: %w", dir, err)
	}
	return nil
}

// copyBufSize is the buffer of every copy: memory per request stays flat
// whatever the chunk or file size.
const copyBufSize = 256 << 10

// writeChunk writes exactly n bytes of r at off of upload id's part file
// and syncs them (and, for a new part file, its directory). A body of
// another length is errShortChunk or errLongChunk; bytes it wrote are past
// the stored chunks and are overwritten by the chunk sent again.
func (b blobs) writeChunk(id string, off, n int64, r io.Reader) error {
	path := b.partPath(id)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("file: open upload: %w", err)
	}
	defer f.Close()
	buf := make([]byte, copyBufSize)
	written, err := io.CopyBuffer(io.NewOffsetWriter(f, off), io.LimitReader(r, n), buf)
	if err != nil {
		return fmt.Errorf("file: write chunk: %w", err)
	}
	if written < n {
		return errShortChunk
	}
	if err := atEnd(r, buf); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("file: sync chunk: %w", err)
	}
	if statErr != nil {
		return syncDir(b.uploads())
	}
	return nil
}

// atEnd answers errLongChunk unless r has no more bytes (or the error of
// a body over the route's limit).
func atEnd(r io.Reader, buf []byte) error {
	n, err := io.ReadFull(r, buf[:1])
	switch {
	case n > 0:
		return errLongChunk
	case errors.Is(err, io.EOF):
		return nil
	}
	return fmt.Errorf("file: read chunk: %w", err)
}

// sameChunk reports whether r holds exactly the n bytes stored at off of
// upload id (a repeated chunk). A body of another length is errShortChunk
// or errLongChunk.
func (b blobs) sameChunk(id string, off, n int64, r io.Reader) (bool, error) {
	f, err := os.Open(b.partPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return false, errPartMissing
	}
	if err != nil {
		return false, fmt.Errorf("file: open upload: %w", err)
	}
	defer f.Close()
	stored := io.NewSectionReader(f, off, n)
	got, want := make([]byte, copyBufSize), make([]byte, copyBufSize)
	same := true
	for left := n; left > 0; {
		k := min(left, int64(len(got)))
		if _, err := io.ReadFull(r, got[:k]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return false, errShortChunk
			}
			return false, fmt.Errorf("file: read chunk: %w", err)
		}
		if _, err := io.ReadFull(stored, want[:k]); err != nil {
			return false, fmt.Errorf("file: read stored chunk: %w", err)
		}
		same = same && bytes.Equal(got[:k], want[:k])
		left -= k
	}
	if err := atEnd(r, got); err != nil {
		return false, err
	}
	return same, nil
}

// promote verifies upload id (size bytes with SHA-256 digest) and moves
// it into place as the blob of digest: hash, sync, rename, sync the
// directories. When the blob exists already (the same content uploaded
// before) the part is verified and removed. A part that is gone while
// the blob exists was promoted by a finish whose row update a crash
// interrupted (the part of a non-empty upload exists from its first
// chunk on), so the blob is taken as is.
func (b blobs) promote(id, digest string, size int64) error {
	part, dst := b.partPath(id), b.blobPath(digest)
	f, err := os.OpenFile(part, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		if st, err := os.Stat(dst); err == nil && st.Size() == size {
			return nil
		}
		if size > 0 {
			return errPartMissing
		}
		if f, err = os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
			return fmt.Errorf("file: create empty upload: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("file: open upload: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if n, err := io.CopyBuffer(h, io.LimitReader(f, size), make([]byte, copyBufSize)); err != nil {
		return fmt.Errorf("file: read upload: %w", err)
	} else if n != size {
		return errPartMissing
	}
	if hex.EncodeToString(h.Sum(nil)) != digest {
		return errDigest
	}
	if _, err := os.Stat(dst); err == nil {
		f.Close()
		return b.removePart(id)
	}
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("file: truncate upload: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("file: sync upload: %w", err)
	}
	f.Close()
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("file: create %s: %w", dir, err)
	}
	if err := os.Rename(part, dst); err != nil {
		return fmt.Errorf("file: move upload into place: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return syncDir(b.uploads())
}

// open opens the blob of digest for reading.
func (b blobs) open(digest string) (*os.File, error) { return os.Open(b.blobPath(digest)) }

// removePart removes upload id's bytes (absent is fine).
func (b blobs) removePart(id string) error {
	if err := os.Remove(b.partPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("file: remove upload: %w", err)
	}
	return nil
}

// removeBlob removes the blob of digest (absent is fine).
func (b blobs) removeBlob(digest string) error {
	if err := os.Remove(b.blobPath(digest)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("file: remove blob: %w", err)
	}
	return nil
}

// parts lists the file ids with a part file; stray answers the other
// entries of the uploads directory (left by nothing this package writes).
func (b blobs) parts() (ids, stray []string, err error) {
	entries, err := os.ReadDir(b.uploads())
	if err != nil {
		return nil, nil, fmt.Errorf("file: list uploads: %w", err)
	}
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".part"); ok && e.Type().IsRegular() {
			ids = append(ids, id)
		} else {
			stray = append(stray, filepath.Join(b.uploads(), e.Name()))
		}
	}
	return ids, stray, nil
}

// digests lists the stored blobs.
func (b blobs) digests() ([]string, error) {
	var out []string
	dirs, err := os.ReadDir(b.store())
	if err != nil {
		return nil, fmt.Errorf("file: list blobs: %w", err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(b.store(), d.Name()))
		if err != nil {
			return nil, fmt.Errorf("file: list blobs: %w", err)
		}
		for _, e := range entries {
			if len(e.Name()) == 64 && strings.HasPrefix(e.Name(), d.Name()) {
				out = append(out, e.Name())
			}
		}
	}
	return out, nil
}
