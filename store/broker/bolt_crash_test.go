package broker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	bolt "go.etcd.io/bbolt"
)

// crashChildEnv names the database a re-executed test binary publishes into.
const crashChildEnv = "BROKER_CRASH_CHILD_DB"

// TestBoltSurvivesSIGKILL re-executes the test binary as a child that
// publishes as fast as it can from several goroutines and prints how many
// Publish calls have returned; the parent kills it with SIGKILL mid-stream
// and checks that every message reported as published is on disk.
func TestBoltSurvivesSIGKILL(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL on windows")
	}
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "events.bolt")
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoltSurvivesSIGKILL$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	is.NoErr(err)
	is.NoErr(cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// Each line is "published <worker> <count>": worker's first count
	// messages are durable.
	confirmed := map[int]int{}
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(waitLong)
	total := 0
	for total < 300 && sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "published" {
			continue
		}
		w, err1 := strconv.Atoi(f[1])
		n, err2 := strconv.Atoi(f[2])
		is.NoErr(err1)
		is.NoErr(err2)
		total += n - confirmed[w]
		confirmed[w] = n
		if time.Now().After(deadline) {
			t.Fatal("child too slow")
		}
	}
	is.True(total >= 300) // the child ran
	is.NoErr(cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	db := openTestDB(t, path)
	t.Cleanup(func() { _ = db.Close() })
	b, err := NewBolt(db, testBoltOptions())
	is.NoErr(err)
	t.Cleanup(func() { _ = b.Close() })
	got, err := b.Read(t.Context(), "crash", 0, maxReadLimit)
	is.NoErr(err)
	onDisk := map[string]bool{}
	for i, m := range got {
		is.Equal(m.Offset, int64(i)) // no holes
		onDisk[string(m.Value)] = true
	}
	for w, n := range confirmed {
		for i := range n {
			if v := crashValue(w, i); !onDisk[v] {
				t.Fatalf("%s was published before the kill but is missing", v)
			}
		}
	}
	t.Logf("%d messages confirmed before SIGKILL, %d on disk", total, len(got))
	// The log is still writable after the crash.
	is.NoErr(b.Publish(t.Context(), msgs("crash", "after")...))
}

func crashValue(worker, i int) string { return fmt.Sprintf("w%d-%06d", worker, i) }

// crashChild publishes until killed. It never returns normally. With
// crashJournalEnv set it publishes through a journal switching files often, and
// names its values after crashRoundEnv (TestBoltJournalSurvivesSIGKILL).
func crashChild(path string) {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	opts := BoltOptions{JournalPath: os.Getenv(crashJournalEnv), JournalRewindBytes: 8 << 10}
	round := os.Getenv(crashRoundEnv)
	b, err := NewBolt(db, opts)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	var out sync.Mutex
	for w := range 4 {
		go func() {
			for i := 0; ; {
				n := 1 + i%5 // mixed batch sizes
				batch := make([]Message, n)
				for j := range batch {
					v := crashValue(w, i+j)
					if round != "" {
						v = round + "-" + v
					}
					batch[j] = Message{Topic: "crash", Value: []byte(v)}
				}
				if err := b.Publish(context.Background(), batch...); err != nil {
					fmt.Println("error", err)
					os.Exit(2)
				}
				i += n
				out.Lock()
				fmt.Printf("published %d %d\n", w, i)
				out.Unlock()
			}
		}()
	}
	select {}
}
