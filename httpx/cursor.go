package httpx

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrBadCursor is returned for a cursor that is malformed, forged, or was
// issued for another list or other filters.
var ErrBadCursor = errors.New("invalid cursor")

// Cursors signs and opens opaque page cursors. A cursor is the JSON of a
// position plus the filters it was issued for, authenticated with HMAC, so a
// client can neither forge a position nor reuse a cursor with other filters.
// It is the one cursor implementation of every surface (bridge, platform,
// callbacks, ingest); they differ only in where the key is kept.
type Cursors struct{ key []byte }

// NewCursors returns a signer with key (at least 32 random bytes).
func NewCursors(key []byte) *Cursors { return &Cursors{key: append([]byte(nil), key...)} }

// CursorKeyFile is the file of the data directory holding the key from
// which LoadCursors derives each surface's cursor key (README.md, "Data
// directory").
const CursorKeyFile = "cursor.key"

// cursorKeySize is the size of the stored key and of each derived key.
const cursorKeySize = 32

// LoadCursors returns the cursor signer of surface (e.g. "callbacks"),
// keyed from the data directory's cursor key file so that cursors stay valid
// across daemon restarts. The file is created (0600) on first use; each
// surface gets its own key derived from it, so a cursor of one surface never
// opens on another.
func LoadCursors(dataDir, surface string) (*Cursors, error) {
	if dataDir == "" {
		return nil, errors.New("cursor key: no data directory")
	}
	master, err := loadCursorKey(filepath.Join(dataDir, CursorKeyFile), os.Link)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, master)
	m.Write([]byte("agentbridge page cursor v1\x00" + surface))
	return NewCursors(m.Sum(nil)), nil
}

// loadCursorKey reads the key file, creating it when absent. Creation
// writes a temporary file and links it into place, so two services starting
// together agree on one key and nobody reads a half-written file; link is
// os.Link (a parameter for tests).
func loadCursorKey(path string, link func(oldname, newname string) error) ([]byte, error) {
	key, err := readCursorKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key = make([]byte, cursorKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("cursor key: %w", err)
	}
	text := []byte(base64.StdEncoding.EncodeToString(key) + "\n")
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cursor-key-*") // 0600
	if err != nil {
		return nil, fmt.Errorf("cursor key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := writeClose(tmp, text); err != nil {
		return nil, fmt.Errorf("cursor key: write %s: %w", tmp.Name(), err)
	}
	if err := link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		// A file system without hard links: create the file in place.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			err = writeClose(f, text)
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("cursor key: create %s: %w", path, err)
		}
	}
	// Whoever linked first won; everyone uses what is stored.
	return readCursorKey(path)
}

func writeClose(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func readCursorKey(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cursor key: %w", err)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("cursor key: %s is readable by other users (mode %04o); run chmod 600 on it", path, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cursor key: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(data)))
	if err != nil || len(key) < cursorKeySize {
		return nil, fmt.Errorf("cursor key: %s is not a base64 key of %d bytes; delete it to make a new one (page cursors issued so far stop working)", path, cursorKeySize)
	}
	return key, nil
}

// CursorScope joins the parts of a scope (the collection and its filters)
// so that no two different lists of parts give the same scope.
func CursorScope(parts ...string) string {
	esc := make([]string, len(parts))
	for i, p := range parts {
		esc[i] = url.QueryEscape(p)
	}
	return strings.Join(esc, "|")
}

// maxCursorLen bounds what Open parses; a callbacks cursor carries up to
// four sort values, which may be long strings.
const maxCursorLen = 4096

func (c *Cursors) mac(scope string, payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)[:16]
}

// Sign encodes v for scope (the collection and its filters, e.g.
// "jobs|client=a|order=desc").
func (c *Cursors) Sign(scope string, v any) (string, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(c.mac(scope, payload)), nil
}

// Open decodes a cursor signed for the same scope into v. Numbers decoded
// into an interface value are json.Number, so integers keep their precision.
func (c *Cursors) Open(scope, cursor string, v any) error {
	if len(cursor) == 0 || len(cursor) > maxCursorLen {
		return ErrBadCursor
	}
	p, s, ok := strings.Cut(cursor, ".")
	if !ok {
		return ErrBadCursor
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	sig, err2 := base64.RawURLEncoding.DecodeString(s)
	if err1 != nil || err2 != nil || !hmac.Equal(sig, c.mac(scope, payload)) {
		return ErrBadCursor
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil || dec.More() {
		return ErrBadCursor
	}
	return nil
}
