package httpx

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

type testPos struct {
	After string `json:"a"`
	N     any    `json:"n"`
}

func TestLoadCursorsPersistsKey(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadCursors(dir, "callbacks")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := a.Sign("list|f=1", testPos{After: "x", N: int64(1) << 60})
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, CursorKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", info.Mode().Perm())
	}
	// A later process on the same directory opens it.
	b, err := LoadCursors(dir, "callbacks")
	if err != nil {
		t.Fatal(err)
	}
	var got testPos
	if err := b.Open("list|f=1", cur, &got); err != nil {
		t.Fatalf("cursor from before the restart: %v", err)
	}
	// Integers keep their precision.
	if got.After != "x" || got.N.(interface{ String() string }).String() != "1152921504606846976" {
		t.Fatalf("got %+v", got)
	}
	// Bound to scope and surface; tamper-evident.
	if err := b.Open("list|f=2", cur, &got); err != ErrBadCursor {
		t.Fatalf("other filters: %v", err)
	}
	other, err := LoadCursors(dir, "ingest")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Open("list|f=1", cur, &got); err != ErrBadCursor {
		t.Fatalf("other surface: %v", err)
	}
	if err := b.Open("list|f=1", "A"+cur, &got); err != ErrBadCursor {
		t.Fatalf("tampered: %v", err)
	}
	if err := b.Open("list|f=1", strings.Repeat("A", 5000)+"."+"AA", &got); err != ErrBadCursor {
		t.Fatalf("oversized: %v", err)
	}
	// Another data directory has another key.
	c, err := LoadCursors(t.TempDir(), "callbacks")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Open("list|f=1", cur, &got); err != ErrBadCursor {
		t.Fatalf("other data directory: %v", err)
	}
}

func TestLoadCursorsConcurrentFirstUse(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	cs := make([]*Cursors, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs[i], errs[i] = LoadCursors(dir, "s")
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if string(cs[i].key) != string(cs[0].key) {
			t.Fatal("two services starting together got different keys")
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".cursor-key-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestLoadCursorsRefusesBadKeyFile(t *testing.T) {
	if _, err := LoadCursors("", "s"); err == nil {
		t.Fatal("no data directory accepted")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, CursorKeyFile)
	if err := os.WriteFile(path, []byte("not base64!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCursors(dir, "s"); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Fatalf("corrupt key file: %v", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	if err := os.WriteFile(path, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCursors(dir, "s"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCursors(dir, "s"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable key file: %v", err)
	}
}

func TestCursorScopeIsUnambiguous(t *testing.T) {
	if CursorScope("a|b", "c") == CursorScope("a", "b|c") {
		t.Fatal("different parts give the same scope")
	}
}

// TestLoadCursorKeyWithoutHardLinks: where the file system refuses hard
// links the key file is created in place, and then reused.
func TestLoadCursorKeyWithoutHardLinks(t *testing.T) {
	path := filepath.Join(t.TempDir(), CursorKeyFile)
	noLinks := func(string, string) error { return &os.LinkError{Op: "link", Err: errors.ErrUnsupported} }
	k1, err := loadCursorKey(path, noLinks)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := loadCursorKey(path, noLinks)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) != cursorKeySize || string(k1) != string(k2) {
		t.Fatal("the key was not kept")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".cursor-key-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
