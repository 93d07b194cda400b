package platform_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/file"
)

// fileCfg keeps test files small: 1 KiB..4 KiB chunks (default 1 KiB),
// files of at most 10 KiB, 3 files and 16 KiB per environment.
func fileCfg() harnessOption {
	return withEnv("PLATFORM_FILES_MIN_CHUNK_BYTES", "1024", "PLATFORM_FILES_MAX_CHUNK_BYTES", "4096",
		"PLATFORM_FILES_DEFAULT_CHUNK_BYTES", "1024", "PLATFORM_FILES_MAX_FILE_BYTES", "10240",
		"PLATFORM_FILES_MAX_FILES", "3", "PLATFORM_FILES_MAX_TOTAL_BYTES", "16384")
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

type filePage struct {
	Items      []file.File `json:"items"`
	NextCursor *string     `json:"next_cursor"`
}

// createFile declares content as name (chunk size cs, 0 for the default).
func (h *harness) createFile(tok, name string, content []byte, cs int) resp {
	h.t.Helper()
	body := map[string]any{"name": name, "size": len(content), "sha256": digest(content), "media_type": "text/plain"}
	if cs > 0 {
		body["chunk_size"] = cs
	}
	return h.post(ePath(h)+"/files", tok, body)
}

// sendChunk posts raw bytes as chunk index of file id.
func (h *harness) sendChunk(tok, id string, index int, data []byte) resp {
	h.t.Helper()
	return h.do(req{method: "POST", path: fmt.Sprintf("%s/files/%s/chunks?index=%d", ePath(h), id, index), token: tok, body: data,
		hdr: map[string]string{"Content-Type": "application/octet-stream"}})
}

// uploadFile uploads content whole and answers the ready file.
func (h *harness) uploadFile(tok, name string, content []byte, cs int) file.File {
	h.t.Helper()
	var f file.File
	h.must(201, h.createFile(tok, name, content, cs), &f)
	for i := int64(0); i < f.Chunks; i++ {
		end := min((i+1)*f.ChunkSize, f.Size)
		h.must(200, h.sendChunk(tok, f.ID, int(i), content[i*f.ChunkSize:end]), nil)
	}
	h.must(200, h.post(ePath(h)+"/files/"+f.ID+"/finish", tok, nil), &f)
	return f
}

func (h *harness) download(tok, id string, hdr map[string]string) resp {
	h.t.Helper()
	return h.do(req{method: "POST", path: ePath(h) + "/files/" + id + "/download", token: tok, hdr: hdr})
}

func TestFileUploadDownload(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, fileCfg())
	op := h.localToken()
	E := ePath(h)
	content := randomBytes(t, 2500) // chunks of 1024, 1024, 452

	var f file.File
	r := h.createFile(op, "scan.txt", content, 0)
	h.must(201, r, &f)
	is.Equal(r.header.Get("Location"), "/api/v1"+strings.TrimPrefix(E, "/api/v1")+"/files/"+f.ID)
	is.Equal(f.Status, "uploading")
	is.Equal(f.ChunkSize, int64(1024))
	is.Equal(f.Chunks, int64(3))
	is.Equal(f.ReceivedChunks, int64(0))
	is.Equal(f.Origin.Kind, "environment")
	is.True(f.ExpiresAt != nil)

	// not visible as content yet
	h.problem(409, file.CodeState, h.download(op, f.ID, nil))
	// finish before the chunks
	h.problem(409, file.CodeIncomplete, h.post(E+"/files/"+f.ID+"/finish", op, nil))
	// out of order
	h.problem(409, file.CodeChunkOrder, h.sendChunk(op, f.ID, 1, content[1024:2048]))
	// wrong length on both sides
	p := h.problem(422, "PF-VALIDATION", h.sendChunk(op, f.ID, 0, content[:1023]))
	is.Equal(p.Diagnostics[0].Code, "chunk_length")
	h.problem(422, "PF-VALIDATION", h.sendChunk(op, f.ID, 0, content[:1025]))
	h.must(200, h.sendChunk(op, f.ID, 0, content[:1024]), &f)
	is.Equal(f.ReceivedChunks, int64(1))
	// the same chunk again: no-op; other bytes: 409
	h.must(200, h.sendChunk(op, f.ID, 0, content[:1024]), &f)
	is.Equal(f.ReceivedChunks, int64(1))
	other := bytes.Clone(content[:1024])
	other[1000] ^= 1
	h.problem(409, file.CodeChunkConflict, h.sendChunk(op, f.ID, 0, other))
	h.must(200, h.sendChunk(op, f.ID, 1, content[1024:2048]), nil)
	// the last chunk has the rest: 452 bytes, not 451 or 453
	h.problem(422, "PF-VALIDATION", h.sendChunk(op, f.ID, 2, content[2048:2499]))
	h.problem(422, "PF-VALIDATION", h.sendChunk(op, f.ID, 2, append(bytes.Clone(content[2048:]), 0)))
	// index bounds
	h.problem(422, "PF-VALIDATION", h.sendChunk(op, f.ID, 3, content[2048:]))
	for _, q := range []string{"-1", "01", "x", ""} {
		r := h.do(req{method: "POST", path: E + "/files/" + f.ID + "/chunks?index=" + q, token: op, body: content[2048:],
			hdr: map[string]string{"Content-Type": "application/octet-stream"}})
		h.problem(422, "PF-VALIDATION", r)
	}
	r = h.do(req{method: "POST", path: E + "/files/" + f.ID + "/chunks?index=2", token: op, body: content[2048:]})
	h.problem(422, "PF-VALIDATION", r) // a JSON content type
	h.must(200, h.sendChunk(op, f.ID, 2, content[2048:]), &f)
	is.Equal(f.ReceivedBytes, int64(2500))
	id := f.ID
	f = file.File{}
	h.must(200, h.post(E+"/files/"+id+"/finish", op, nil), &f)
	is.Equal(f.Status, "ready")
	is.True(f.ExpiresAt == nil && f.FinishedAt != nil)
	// finishing again answers it unchanged; chunks no longer change
	var again file.File
	h.must(200, h.post(E+"/files/"+f.ID+"/finish", op, map[string]any{}), &again)
	is.Equal(again.Status, "ready")
	h.problem(409, file.CodeState, h.sendChunk(op, f.ID, 0, content[:1024]))

	// read, list
	h.must(200, h.get(E+"/files/"+f.ID, op), &again)
	is.Equal(again.SHA256, digest(content))
	var page filePage
	h.must(200, h.get(E+"/files", op), &page)
	is.Equal(len(page.Items), 1)
	h.must(200, h.get(E+"/files?status=uploading", op), &page)
	is.Equal(len(page.Items), 0)
	h.problem(422, "PF-VALIDATION", h.get(E+"/files?status=deleted", op))

	// download: whole, ranges, conditional
	r = h.download(op, f.ID, nil)
	is.Equal(r.status, 200)
	is.True(bytes.Equal(r.body, content))
	is.Equal(r.header.Get("Content-Length"), "2500")
	is.Equal(r.header.Get("ETag"), `"`+digest(content)+`"`)
	is.Equal(r.header.Get("Content-Type"), "text/plain")
	is.Equal(r.header.Get("Accept-Ranges"), "bytes")
	r = h.download(op, f.ID, map[string]string{"Range": "bytes=1000-1999"})
	is.Equal(r.status, 206)
	is.True(bytes.Equal(r.body, content[1000:2000]))
	is.Equal(r.header.Get("Content-Range"), "bytes 1000-1999/2500")
	r = h.download(op, f.ID, map[string]string{"Range": "bytes=-100"})
	is.Equal(r.status, 206)
	is.True(bytes.Equal(r.body, content[2400:]))
	r = h.download(op, f.ID, map[string]string{"Range": "bytes=2500-"})
	is.Equal(r.status, 416)
	r = h.download(op, f.ID, map[string]string{"Range": "bytes=0-9", "If-Range": `"` + digest(content) + `"`})
	is.Equal(r.status, 206)
	r = h.download(op, f.ID, map[string]string{"Range": "bytes=0-9", "If-Range": `"other"`})
	is.Equal(r.status, 200)
	is.Equal(len(r.body), 2500)

	// delete: gone from every route, content reclaimed
	var del file.Deletion
	h.must(200, h.do(req{method: "DELETE", path: E + "/files/" + f.ID, token: op}), &del)
	is.Equal(del.RetainedForRuns, 0)
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/files/"+f.ID, op))
	h.problem(404, "PF-NOT-FOUND", h.download(op, f.ID, nil))
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "DELETE", path: E + "/files/" + f.ID, token: op}))
	_, err := os.Stat(filepath.Join(h.dir, "files", "blobs", digest(content)[:2], digest(content)))
	is.True(os.IsNotExist(err))
}

func TestFileCreateValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fileCfg())
	op := h.localToken()
	E := ePath(h)
	sum := digest(nil)
	ok := map[string]any{"name": "a.bin", "size": 10, "sha256": sum}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for k, v := range ok {
			m[k] = v
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		name string
		body map[string]any
		path string
	}{
		{"no name", with("name", nil), "/name"},
		{"blank name", with("name", "  "), "/name"},
		{"name 256", with("name", strings.Repeat("n", 256)), "/name"},
		{"slash", with("name", "a/b"), "/name"},
		{"control", with("name", "a\tb"), "/name"},
		{"no size", with("size", nil), "/size"},
		{"size -1", with("size", -1), "/size"},
		{"size over max", with("size", 10241), "/size"},
		{"size not a number", with("size", "10"), "/size"},
		{"no sha", with("sha256", nil), "/sha256"},
		{"short sha", with("sha256", sum[:63]), "/sha256"},
		{"upper sha", with("sha256", strings.ToUpper(sum)), "/sha256"},
		{"not hex", with("sha256", strings.Repeat("g", 64)), "/sha256"},
		{"media type", with("media_type", "not a type"), "/media_type"},
		{"media type 256", with("media_type", "text/"+strings.Repeat("x", 251)), "/media_type"},
		{"chunk below", with("chunk_size", 1023), "/chunk_size"},
		{"chunk above", with("chunk_size", 4097), "/chunk_size"},
		{"extra field", with("owner", "me"), "/owner"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := h.problem(422, "PF-VALIDATION", h.post(E+"/files", op, c.body))
			if len(p.Diagnostics) == 0 || p.Diagnostics[0].Path != c.path {
				t.Fatalf("diagnostics %+v, want path %s", p.Diagnostics, c.path)
			}
		})
	}
	// the bounds themselves are accepted
	for _, b := range []map[string]any{with("name", strings.Repeat("n", 255)), with("size", 10240), with("size", 0),
		with("chunk_size", 1024), with("chunk_size", 4096), with("media_type", "application/pdf")} {
		h.must(201, h.post(E+"/files", op, b), nil)
		var page filePage
		h.must(200, h.get(E+"/files", op), &page)
		h.must(200, h.do(req{method: "DELETE", path: E + "/files/" + page.Items[0].ID, token: op}), nil)
	}
	var page filePage
	h.must(200, h.get(E+"/files", op), &page)
	if len(page.Items) != 0 {
		t.Fatalf("refused creations left %d files", len(page.Items))
	}
}

func TestFileQuotas(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, fileCfg())
	op := h.localToken()
	E := ePath(h)
	// total bytes: 16384; 10240 + 6144 fits exactly, one more byte does not
	a := randomBytes(t, 10240)
	h.uploadFile(op, "a", a, 4096)
	h.problem(429, "PF-OPERATION-CAPACITY", h.createFile(op, "b", randomBytes(t, 6145), 4096))
	var b file.File
	h.must(201, h.createFile(op, "b", randomBytes(t, 6144), 4096), &b)
	// files: 3 (uploading ones count)
	h.problem(429, "PF-OPERATION-CAPACITY", h.createFile(op, "c", randomBytes(t, 1), 0))
	h.must(200, h.do(req{method: "DELETE", path: E + "/files/" + b.ID, token: op}), nil)
	h.must(201, h.createFile(op, "c", nil, 0), nil)
	h.must(201, h.createFile(op, "d", nil, 0), nil)
	h.problem(429, "PF-OPERATION-CAPACITY", h.createFile(op, "e", nil, 0))
	var page filePage
	h.must(200, h.get(E+"/files?limit=2", op), &page)
	is.Equal(len(page.Items), 2)
	is.True(page.NextCursor != nil)
	h.must(200, h.get(E+"/files?limit=2&cursor="+*page.NextCursor, op), &page)
	is.Equal(len(page.Items), 1)
	is.True(page.NextCursor == nil)
}

func TestFileDigestMismatchAndEmptyFile(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, fileCfg())
	op := h.localToken()
	E := ePath(h)
	content := randomBytes(t, 2000)
	var f file.File
	h.must(201, h.post(E+"/files", op, map[string]any{"name": "x", "size": 2000, "sha256": digest([]byte("other"))}), &f)
	h.must(200, h.sendChunk(op, f.ID, 0, content[:1024]), nil)
	h.must(200, h.sendChunk(op, f.ID, 1, content[1024:]), nil)
	h.problem(422, file.CodeDigest, h.post(E+"/files/"+f.ID+"/finish", op, nil))
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/files/"+f.ID, op))
	_, err := os.Stat(filepath.Join(h.dir, "files", "uploads", f.ID+".part"))
	is.True(os.IsNotExist(err))

	// an empty file has no chunks
	h.must(201, h.createFile(op, "empty", nil, 0), &f)
	is.Equal(f.Chunks, int64(0))
	h.must(200, h.post(E+"/files/"+f.ID+"/finish", op, nil), &f)
	r := h.download(op, f.ID, nil)
	is.Equal(r.status, 200)
	is.Equal(r.header.Get("Content-Length"), "0")
}

func TestFileBodyLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fileCfg())
	op := h.localToken()
	var f file.File
	h.must(201, h.createFile(op, "big", randomBytes(t, 10240), 4096), &f)
	// a body over the largest chunk size is refused before it is read whole
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.sendChunk(op, f.ID, 0, randomBytes(t, 4097)))
	h.must(200, h.sendChunk(op, f.ID, 0, randomBytes(t, 4096)), nil)
}

func TestFileAccessAndEnvironments(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, fileCfg())
	op := h.localToken()
	E := ePath(h)
	content := randomBytes(t, 100)
	f := h.uploadFile(op, "a", content, 0)

	_, viewer := h.user("vera", "viewer", h.envScope())
	for _, r := range []resp{
		h.createFile(viewer, "v", content, 0),
		h.get(E+"/files", viewer),
		h.get(E+"/files/"+f.ID, viewer),
		h.download(viewer, f.ID, nil),
		h.do(req{method: "DELETE", path: E + "/files/" + f.ID, token: viewer}),
		h.sendChunk(viewer, f.ID, 0, content),
		h.post(E+"/files/"+f.ID+"/finish", viewer, nil),
	} {
		h.problem(403, "PF-FORBIDDEN", r)
	}
	h.problem(401, "PF-UNAUTHENTICATED", h.get(E+"/files", ""))

	// a reader with file.read only reads
	readerID, reader := h.user("rita", "", h.envScope())
	h.grant(readerID, h.envScope(), "", "file.read")
	h.must(200, h.get(E+"/files/"+f.ID, reader), nil)
	is.Equal(h.download(reader, f.ID, nil).status, 200)
	h.problem(403, "PF-FORBIDDEN", h.createFile(reader, "r", content, 0))

	// another environment of the same project never sees the file
	env2 := h.environment(h.ws.ProjectID, "second")
	E2 := h.envPath(h.ws.TenantID, h.ws.ProjectID, env2.ID)
	h.problem(404, "PF-NOT-FOUND", h.get(E2+"/files/"+f.ID, op))
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "POST", path: E2 + "/files/" + f.ID + "/download", token: op}))
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "DELETE", path: E2 + "/files/" + f.ID, token: op}))
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/files/not-a-uuid", op))
	var page filePage
	h.must(200, h.get(E2+"/files", op), &page)
	is.Equal(len(page.Items), 0)
}

func TestFileUploadExpires(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	clock := &fakeClock{t: clockStart()}
	h := newHarness(t, fileCfg(), withClock(clock))
	op := h.localToken()
	E := ePath(h)
	content := randomBytes(t, 3000)
	var f file.File
	h.must(201, h.createFile(op, "slow", content, 0), &f)
	h.must(200, h.sendChunk(op, f.ID, 0, content[:1024]), &f)
	part := filepath.Join(h.dir, "files", "uploads", f.ID+".part")
	_, err := os.Stat(part)
	is.NoErr(err)
	// each chunk extends the upload's life: 24h after the last one (the
	// clock also ages tokens: sign in again after each jump)
	advance := func(d time.Duration) {
		clock.Set(clock.Now().Add(d))
		h.opTok = ""
		op = h.localToken()
	}
	advance(23 * time.Hour)
	h.must(200, h.sendChunk(op, f.ID, 1, content[1024:2048]), &f)
	advance(24*time.Hour - time.Millisecond)
	h.must(200, h.get(E+"/files/"+f.ID, op), nil)
	advance(time.Millisecond)
	h.problem(409, file.CodeState, h.sendChunk(op, f.ID, 2, content[2048:]))
	// the sweeper reclaims it: row and bytes
	deadline := time.Now().Add(10 * time.Second)
	for h.get(E+"/files/"+f.ID, op).status != 404 {
		if time.Now().After(deadline) {
			t.Fatal("the expired upload was not reclaimed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = os.Stat(part)
	is.True(os.IsNotExist(err))
}

func TestFileUploadSurvivesRestart(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, fileCfg())
	op := h.localToken()
	E := ePath(h)
	content := randomBytes(t, 3000)
	var f file.File
	h.must(201, h.createFile(op, "resumed", content, 0), &f)
	h.must(200, h.sendChunk(op, f.ID, 0, content[:1024]), nil)
	h.must(200, h.sendChunk(op, f.ID, 1, content[1024:2048]), nil)

	// what a crash can leave behind: a part without an upload, a blob no
	// row names, a stray temporary file
	orphanPart := filepath.Join(h.dir, "files", "uploads", "0190a0a0-0000-7000-8000-000000000000.part")
	orphanBlob := filepath.Join(h.dir, "files", "blobs", "ab", "ab"+strings.Repeat("0", 62))
	stray := filepath.Join(h.dir, "files", "uploads", "x.tmp")
	is.NoErr(os.MkdirAll(filepath.Dir(orphanBlob), 0o700))
	for _, p := range []string{orphanPart, orphanBlob, stray} {
		is.NoErr(os.WriteFile(p, []byte("left over"), 0o600))
	}
	h.restart(true)
	op = h.localToken()
	for _, p := range []string{orphanPart, orphanBlob, stray} {
		_, err := os.Stat(p)
		is.True(os.IsNotExist(err))
	}
	h.must(200, h.get(E+"/files/"+f.ID, op), &f)
	is.Equal(f.ReceivedChunks, int64(2)) // resumed, not restarted
	h.must(200, h.sendChunk(op, f.ID, 1, content[1024:2048]), nil)
	h.must(200, h.sendChunk(op, f.ID, 2, content[2048:]), nil)
	h.must(200, h.post(E+"/files/"+f.ID+"/finish", op, nil), &f)
	r := h.download(op, f.ID, nil)
	is.True(bytes.Equal(r.body, content))
}

func TestFileSameContentSharesBlob(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, fileCfg())
	op := h.localToken()
	E := ePath(h)
	content := randomBytes(t, 1500)
	a := h.uploadFile(op, "a", content, 0)
	b := h.uploadFile(op, "b", content, 0)
	blob := filepath.Join(h.dir, "files", "blobs", a.SHA256[:2], a.SHA256)
	h.must(200, h.do(req{method: "DELETE", path: E + "/files/" + a.ID, token: op}), nil)
	_, err := os.Stat(blob)
	is.NoErr(err) // b still needs it
	is.True(bytes.Equal(h.download(op, b.ID, nil).body, content))
	h.must(200, h.do(req{method: "DELETE", path: E + "/files/" + b.ID, token: op}), nil)
	_, err = os.Stat(blob)
	is.True(os.IsNotExist(err))
	_ = http.StatusOK
}

// A crash after finish moved the bytes into place but before the row said
// ready: the blob is kept at start (an upload declares it) and finishing
// again makes the file ready.
func TestFileFinishInterruptedAfterRename(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, fileCfg())
	op := h.localToken()
	E := ePath(h)
	content := randomBytes(t, 2000)
	var f file.File
	h.must(201, h.createFile(op, "x", content, 0), &f)
	h.must(200, h.sendChunk(op, f.ID, 0, content[:1024]), nil)
	h.must(200, h.sendChunk(op, f.ID, 1, content[1024:]), nil)
	h.stop()
	blob := filepath.Join(h.dir, "files", "blobs", f.SHA256[:2], f.SHA256)
	is.NoErr(os.MkdirAll(filepath.Dir(blob), 0o700))
	is.NoErr(os.Rename(filepath.Join(h.dir, "files", "uploads", f.ID+".part"), blob))
	h.start()
	op = h.localToken()
	_, err := os.Stat(blob)
	is.NoErr(err)
	h.must(200, h.post(E+"/files/"+f.ID+"/finish", op, nil), &f)
	is.Equal(f.Status, "ready")
	is.True(bytes.Equal(h.download(op, f.ID, nil).body, content))
}
