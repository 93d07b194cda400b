package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/file"
)

func TestFileCommands(t *testing.T) {
	is := is.New(t)
	d := startDaemon(t)
	dir := t.TempDir()
	content := make([]byte, 300_000) // 5 chunks of 64 KiB
	_, _ = rand.Read(content)
	src := filepath.Join(dir, "report.bin")
	is.NoErr(os.WriteFile(src, content, 0o600))

	is.Equal(d.ok("file", "list"), "no files\n")
	var f file.File
	d.okJSON(&f, "file", "upload", src, "--chunk-size", "65536", "--name", "q3.bin", "--json")
	is.Equal(f.Status, "ready")
	is.Equal(f.Name, "q3.bin")
	is.Equal(f.Chunks, int64(5))
	out := d.ok("file", "list")
	is.True(strings.Contains(out, f.ID) && strings.Contains(out, "ready"))
	is.True(strings.Contains(d.ok("file", "get", f.ID), "5 of 5 received"))

	// download, and resume a download from its .part file
	dst := filepath.Join(dir, "out.bin")
	d.ok("file", "download", f.ID, "-o", dst, "--quiet")
	got, err := os.ReadFile(dst)
	is.NoErr(err)
	is.True(bytes.Equal(got, content))
	is.NoErr(os.WriteFile(dst+"3.part", content[:1000], 0o600))
	d.ok("file", "download", f.ID, "-o", dst+"3", "--quiet")
	got, err = os.ReadFile(dst + "3")
	is.NoErr(err)
	is.True(bytes.Equal(got, content))

	// --resume of a finished upload with the same content answers it; other
	// content is refused
	var again file.File
	d.okJSON(&again, "file", "upload", src, "--resume", f.ID, "--json")
	is.Equal(again.ID, f.ID)
	other := filepath.Join(dir, "other.bin")
	is.NoErr(os.WriteFile(other, []byte("other"), 0o600))
	code, _, errw := d.run("file", "upload", other, "--resume", f.ID)
	is.Equal(code, 1)
	is.True(strings.Contains(errw, "was declared with"))

	// usage errors
	code, _, _ = d.run("file", "list", "--status", "gone")
	is.Equal(code, ExitUsage)
	code, _, _ = d.run("file", "upload", filepath.Join(dir, "missing.bin"))
	is.Equal(code, ExitUsage)
	code, _, errw = d.run("file", "get", "01a21b46-fde6-7d71-b8e1-5cc5fac60097")
	is.Equal(code, 1)
	is.True(strings.Contains(errw, "PF-NOT-FOUND"))

	is.True(strings.Contains(d.ok("file", "delete", f.ID), "Deleted file "+f.ID))
	is.Equal(d.ok("file", "list"), "no files\n")
}

func TestHumanCompleteAttach(t *testing.T) {
	is := is.New(t)
	d := startDaemon(t)
	d.ok("workflow", "publish", filepath.Join("..", "examples", "scan-review", "scan-review.yaml"))
	d.ok("workflow", "activate", "acme/scan-review")
	var r engine.Run
	d.okJSON(&r, "run", "start", "acme/scan-review", "--set", "orderId=A-1001", "--json")
	var tasks []engine.HumanTask
	d.okJSON(&tasks, "human", "list", "--run", r.ID, "--json")
	is.Equal(len(tasks), 1)
	note := filepath.Join("..", "examples", "scan-review", "signed-note.txt")
	code, _, _ := d.run("human", "complete", tasks[0].ID, "approve", "--attach", "scan")
	is.Equal(code, ExitUsage)
	out := d.ok("human", "complete", tasks[0].ID, "approve", "--attach", "scan="+note)
	is.True(strings.Contains(out, "is succeeded"))
	d.okJSON(&r, "run", "get", r.ID, "--json")
	var output map[string]any
	is.NoErr(json.Unmarshal(r.State.Output, &output))
	is.Equal(output["scanName"], "signed-note.txt")
	st, err := os.Stat(note)
	is.NoErr(err)
	is.Equal(output["scanBytes"], float64(st.Size()))
	var files []file.File
	d.okJSON(&files, "file", "list", "--json")
	is.Equal(len(files), 1)
	is.Equal(files[0].Origin.Kind, "human_task")
}
