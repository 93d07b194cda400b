package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/file"
)

// TestFileUpload1GiBAcrossRestart uploads 1 GiB through the CLI, stops the
// daemon in the middle, resumes the upload (only the missing chunks) and
// downloads the content byte-identical, while the heap stays flat. It
// takes about a minute and 3 GiB of disk: it runs only with
// BRIDGE_TEST_1GIB=1 (BENCHMARKS.md, "Platform files", has the numbers of
// the same scenario against a real bridge serve killed with SIGKILL).
func TestFileUpload1GiBAcrossRestart(t *testing.T) {
	if os.Getenv("BRIDGE_TEST_1GIB") != "1" {
		t.Skip("set BRIDGE_TEST_1GIB=1 to upload 1 GiB across a daemon restart")
	}
	is := is.New(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "big.bin")
	want := writeRandom(t, src, 1<<30)

	var peak atomic.Uint64
	stopSampling := sampleHeap(&peak)
	defer stopSampling()

	_, stop := serveInProcess(t, dir)
	d := &daemonCLI{t: t, dir: dir}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		code, _, _ := run(ctx, "file", "upload", src, "--quiet", "--data-dir", dir)
		done <- code
	}()
	// stop the daemon once half the chunks are in
	var f file.File
	for deadline := time.Now().Add(5 * time.Minute); ; {
		var files []file.File
		d.okJSON(&files, "file", "list", "--status", "uploading", "--json")
		if len(files) == 1 && files[0].ReceivedChunks >= files[0].Chunks/2 {
			f = files[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the upload did not get half way")
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	is.True(<-done != 0) // the interrupted upload fails, saying how to resume
	_, stop = serveInProcess(t, dir)
	defer stop()
	var got file.File
	d.okJSON(&got, "file", "get", f.ID, "--json")
	is.True(got.ReceivedChunks >= f.ReceivedChunks) // resumed, not restarted
	is.True(got.ReceivedChunks < got.Chunks)
	d.okJSON(&got, "file", "upload", src, "--resume", f.ID, "--quiet", "--json")
	is.Equal(got.Status, "ready")
	is.Equal(got.SHA256, want)
	out := filepath.Join(dir, "big.out")
	d.ok("file", "download", f.ID, "-o", out, "--quiet")
	is.Equal(sumFile(t, out), want)
	t.Logf("peak heap in use: %d MiB", peak.Load()>>20)
	is.True(peak.Load() < 256<<20) // flat: 1 GiB never held in memory
}

// writeRandom writes n pseudo-random bytes to path and answers their
// SHA-256.
func writeRandom(t *testing.T, path string, n int64) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	r := rand.NewChaCha8([32]byte{1})
	if _, err := io.CopyN(io.MultiWriter(f, h), r, n); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sumFile(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sampleHeap records the largest HeapInuse every 50 ms until stopped.
func sampleHeap(peak *atomic.Uint64) func() {
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(stop) }
}
