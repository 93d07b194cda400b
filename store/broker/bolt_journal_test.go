package broker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	bolt "go.etcd.io/bbolt"
)

// Environment of crashChild for the journal's SIGKILL test.
const (
	crashJournalEnv = "BROKER_CRASH_CHILD_JOURNAL"
	crashRoundEnv   = "BROKER_CRASH_CHILD_ROUND"
)

func journalOptions(t *testing.T) BoltOptions {
	o := testBoltOptions()
	o.JournalPath = filepath.Join(t.TempDir(), "events.journal")
	return o
}

func TestBoltJournalContract(t *testing.T) {
	testContract(t, func(t *testing.T) func() Broker {
		e := newBoltEnv(t, journalOptions(t))
		return func() Broker { return e.open() }
	})
}

// A published message is readable and delivered as soon as Publish
// returns, while bbolt cannot have it yet (a write transaction held open
// stops the applier), and bbolt gets it once that ends.
func TestBoltJournalServesPendingMessages(t *testing.T) {
	is := is.New(t)
	e := newBoltEnv(t, journalOptions(t))
	b := e.open()
	ctx := t.Context()
	is.NoErr(b.Publish(ctx, msgs("p", "a0")...))
	waitUntil(t, "a0 applied", func() bool { return inBolt(t, e.db, "p") == 1 })

	tx, err := e.db.Begin(true)
	is.NoErr(err)
	is.NoErr(b.Publish(ctx, msgs("p", "a1", "a2")...))
	is.NoErr(b.Publish(ctx, msgs("q", "b0")...))
	got, err := b.Read(ctx, "p", 0, 10)
	is.NoErr(err)
	is.Equal(values(got), []string{"a0", "a1", "a2"})
	is.Equal(got[2].Offset, int64(2))
	got, err = b.Read(ctx, "p", 2, 10)
	is.NoErr(err)
	is.Equal(values(got), []string{"a2"})
	got, err = b.Read(ctx, "p", 0, 2)
	is.NoErr(err)
	is.Equal(values(got), []string{"a0", "a1"})
	n, err := b.Latest(ctx, "q")
	is.NoErr(err)
	is.Equal(n, int64(1))
	r := newRecorder(nil)
	subscribe(t, b, "g", []string{"*"}, r.handle)
	r.waitValues(t, "a0", "a1", "a2", "b0")

	is.NoErr(tx.Rollback())
	waitUntil(t, "everything applied", func() bool { return inBolt(t, e.db, "p") == 3 && inBolt(t, e.db, "q") == 1 })
	got, err = b.Read(ctx, "p", 0, 10)
	is.NoErr(err)
	is.Equal(values(got), []string{"a0", "a1", "a2"})
}

// The writer switches between the journal's two files once bbolt holds the
// other's frames, so neither grows, and what they hold after any number of
// switches survives a reopen.
func TestBoltJournalRewinds(t *testing.T) {
	is := is.New(t)
	opts := journalOptions(t)
	opts.JournalRewindBytes = 512
	e := newBoltEnv(t, opts)
	b := e.open()
	for i := range 200 {
		is.NoErr(b.Publish(t.Context(), msgs("r", fmt.Sprintf("m%03d", i))...))
		// Each publish is applied before the next, so the writer finds the
		// other file applied whenever the current one is full, however fast
		// the disk syncs (the applier paces itself by ApplyInterval).
		waitUntil(t, "applied", func() bool { return inBolt(t, e.db, "r") == i+1 })
	}
	is.True(b.j.rewinds > 2)
	for _, name := range journalFiles(opts.JournalPath) {
		st, err := os.Stat(name)
		is.NoErr(err)
		is.True(st.Size() < 8<<10) // rewritten in place, not grown
	}
	b = e.open()
	got, err := b.Read(t.Context(), "r", 0, 1000)
	is.NoErr(err)
	is.Equal(len(got), 200)
	for i, m := range got {
		is.Equal(m.Offset, int64(i))
		is.Equal(string(m.Value), fmt.Sprintf("m%03d", i))
	}
}

// crashJournal leaves a journal whose frames bbolt lacks, as a SIGKILL
// between the journal's fdatasync and the applier's commit would: values
// v0..v(n-1) on topic "j", of which bbolt holds the first applied. The
// last two frames are one Publish call, the others one each.
func crashJournal(t *testing.T, dir string, n, applied int) (dbPath, jPath string, frameEnds []int64) {
	t.Helper()
	is := is.New(t)
	dbPath, jPath = filepath.Join(dir, "events.bolt"), filepath.Join(dir, "events.journal")
	db := openTestDB(t, dbPath)
	defer db.Close()
	j, err := openJournal(jPath, db, testBoltOptions().Logger)
	is.NoErr(err)
	defer j.close()
	var recs []journalRec
	for i := range n {
		rec := encodeRecord(&Message{Topic: "j", Value: fmt.Appendf(nil, "v%d", i)}, time.Now())
		// One Publish call per frame, except the last two: one call.
		j.appendFrame("j", int64(i), rec, i != n-2)
		recs = append(recs, journalRec{topic: "j", off: int64(i), rec: rec})
		frameEnds = append(frameEnds, j.pos+int64(len(j.buf)))
	}
	is.NoErr(j.flush())
	is.NoErr(db.Update(func(tx *bolt.Tx) error {
		_, err := applyRecords(tx, recs[:applied])
		return err
	}))
	return dbPath, jPath, frameEnds
}

func openJournaled(t *testing.T, dbPath, jPath string) (*bolt.DB, *Bolt) {
	t.Helper()
	db := openTestDB(t, dbPath)
	opts := testBoltOptions()
	opts.JournalPath = jPath
	b, err := NewBolt(db, opts)
	if err != nil {
		db.Close()
		t.Fatalf("new bolt: %v", err)
	}
	return db, b
}

// replayed opens dbPath with the journal at jPath, reads every message of
// topic (in pages) and its log end, and closes both.
func replayed(t *testing.T, dbPath, jPath, topic string) (got []Message, latest int64) {
	t.Helper()
	db, b := openJournaled(t, dbPath, jPath)
	defer db.Close()
	defer b.Close()
	latest, err := b.Latest(t.Context(), topic)
	if err != nil {
		t.Fatalf("latest %s: %v", topic, err)
	}
	for {
		page, err := b.Read(t.Context(), topic, int64(len(got)), maxReadLimit)
		if err != nil {
			t.Fatalf("read %s: %v", topic, err)
		}
		if len(page) == 0 {
			return got, latest
		}
		got = append(got, page...)
	}
}

func TestBoltJournalReplay(t *testing.T) {
	is := is.New(t)
	dbPath, jPath, _ := crashJournal(t, t.TempDir(), 10, 4)
	for range 2 { // replaying twice changes nothing
		db, b := openJournaled(t, dbPath, jPath)
		got, err := b.Read(t.Context(), "j", 0, 100)
		is.NoErr(err)
		is.Equal(len(got), 10)
		for i, m := range got {
			is.Equal(m.Offset, int64(i))
			is.Equal(string(m.Value), fmt.Sprintf("v%d", i))
		}
		is.Equal(inBolt(t, db, "j"), 10) // replayed into bbolt, not only into memory
		is.NoErr(b.Close())
		is.NoErr(db.Close())
	}
}

// A write torn at any byte of the last call's frames loses that call (both
// of its messages: a call is never half there); a corrupted byte ends the
// replay at its frame.
func TestBoltJournalTornTail(t *testing.T) {
	is := is.New(t)
	src := t.TempDir()
	dbPath, jPath, ends := crashJournal(t, src, 5, 2)
	whole, err := os.ReadFile(jPath)
	is.NoErr(err)
	dbBytes, err := os.ReadFile(dbPath)
	is.NoErr(err)
	check := func(journal []byte, want int) {
		t.Helper()
		dir := t.TempDir()
		d, j := filepath.Join(dir, "events.bolt"), filepath.Join(dir, "events.journal")
		is.NoErr(os.WriteFile(d, dbBytes, 0o600))
		is.NoErr(os.WriteFile(j, journal, 0o600))
		got, latest := replayed(t, d, j, "j")
		is.Equal(latest, int64(want))
		is.Equal(len(got), want)
	}
	for cut := ends[2]; cut < ends[4]; cut++ {
		check(whole[:cut], 3)
	}
	check(whole, 5)
	bad := bytes.Clone(whole)
	bad[ends[2]+journalFrameHeader+3]++ // in frame 3's body
	check(bad, 3)
}

// A journal that is not this events.bolt's (events.bolt moved aside, say)
// is discarded, not replayed.
func TestBoltJournalOfAnotherFileIsDiscarded(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	_, jPath, _ := crashJournal(t, dir, 5, 0)
	db, b := openJournaled(t, filepath.Join(t.TempDir(), "fresh.bolt"), jPath)
	defer db.Close()
	defer b.Close()
	n, err := b.Latest(t.Context(), "j")
	is.NoErr(err)
	is.Equal(n, int64(0))
	topics, err := b.Topics(t.Context())
	is.NoErr(err)
	is.Equal(len(topics), 0)
	is.NoErr(b.Publish(t.Context(), msgs("j", "new")...))
}

// TestBoltJournalSurvivesSIGKILL kills a child publishing through the
// journal at random moments, in rounds on the same files, and checks after
// each that every acknowledged message is there exactly once, each
// worker's in the order it published them, with contiguous offsets.
func TestBoltJournalSurvivesSIGKILL(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL on windows")
	}
	is := is.New(t)
	dir := t.TempDir()
	path, jPath := filepath.Join(dir, "events.bolt"), filepath.Join(dir, "events.journal")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	confirmed := map[string]int{} // "r<round>-w<worker>" -> acknowledged count
	for round := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBoltSurvivesSIGKILL$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashJournalEnv+"="+jPath, crashRoundEnv+"="+fmt.Sprintf("r%d", round))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		is.NoErr(err)
		is.NoErr(cmd.Start())
		// An assertion failing before the kill must not leave the child
		// running (a second Kill or Wait is harmless).
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		killAt := 20 + rng.IntN(3000)
		sc := bufio.NewScanner(out)
		deadline := time.Now().Add(waitLong)
		total := 0
		for total < killAt && sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "published" {
				continue
			}
			n, err := strconv.Atoi(f[2])
			is.NoErr(err)
			k := fmt.Sprintf("r%d-w%s", round, f[1])
			total += n - confirmed[k]
			confirmed[k] = n
			if time.Now().After(deadline) {
				t.Fatal("child too slow")
			}
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		is.NoErr(cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		// Lines printed between the last one read and the kill were
		// acknowledged too; reading them now only adds to what is checked.
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "published" {
				if n, err := strconv.Atoi(f[2]); err == nil {
					k := fmt.Sprintf("r%d-w%s", round, f[1])
					confirmed[k] = max(confirmed[k], n)
				}
			}
		}
		is.True(total >= killAt) // the child ran

		got, _ := replayed(t, path, jPath, "crash") // in pages: the rounds add up to more than one Read returns
		last := map[string]int{}
		seen := map[string]bool{}
		for i, m := range got {
			is.Equal(m.Offset, int64(i)) // contiguous
			v := string(m.Value)
			if seen[v] {
				t.Fatalf("%s appears twice", v)
			}
			seen[v] = true
			k, num, ok := strings.Cut(v[strings.Index(v, "-")+1:], "-")
			is.True(ok)
			k = v[:strings.Index(v, "-")] + "-" + k
			idx, err := strconv.Atoi(num)
			is.NoErr(err)
			if p, ok := last[k]; ok && idx != p+1 {
				t.Fatalf("%s follows %s-%06d: out of order or a hole", v, k, p)
			}
			last[k] = idx
		}
		for k, n := range confirmed {
			if l, ok := last[k]; n > 0 && (!ok || l < n-1) {
				t.Fatalf("round %d: %s acknowledged %d messages, only %d on disk", round, k, n, last[k]+1)
			}
		}
		t.Logf("round %d: killed after %d acknowledgements; %d messages on disk", round, total, len(got))
	}
}

func inBolt(t *testing.T, db *bolt.DB, topic string) int {
	t.Helper()
	n := 0
	if err := db.View(func(tx *bolt.Tx) error {
		if tb := topicBucket(tx, topic); tb != nil {
			n = tb.Stats().KeyN
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func values(ms []Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Value)
	}
	return out
}

// Compaction at start (store/boltcompact, bbolt's Compact) copies the
// journal's id with the rest, so a journal events.bolt lacks is still
// replayed into the compacted file.
func TestBoltJournalSurvivesCompaction(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	dbPath, jPath, _ := crashJournal(t, dir, 6, 2)
	src, err := bolt.Open(dbPath, 0o600, &bolt.Options{ReadOnly: true})
	is.NoErr(err)
	compacted := filepath.Join(dir, "compacted.bolt")
	dst, err := bolt.Open(compacted, 0o600, nil)
	is.NoErr(err)
	is.NoErr(bolt.Compact(dst, src, 1<<20))
	is.NoErr(dst.Close())
	is.NoErr(src.Close())
	got, _ := replayed(t, compacted, jPath, "j")
	is.Equal(len(got), 6)
}

// Frames in both files, the older file's not all in bbolt: replay applies
// the older file's chain first, then the newer's, whichever file is which.
func TestBoltJournalReplaysBothFiles(t *testing.T) {
	for _, first := range []int{0, 1} {
		t.Run(fmt.Sprintf("first file %d", first), func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			dbPath, jPath := filepath.Join(dir, "events.bolt"), filepath.Join(dir, "events.journal")
			db := openTestDB(t, dbPath)
			j, err := openJournal(jPath, db, testBoltOptions().Logger)
			is.NoErr(err)
			if first == 1 {
				j.switchFile()
			}
			var recs []journalRec
			for i := range 10 {
				if i == 5 {
					j.switchFile()
				}
				rec := encodeRecord(&Message{Topic: "j", Value: fmt.Appendf(nil, "v%d", i)}, time.Now())
				j.appendFrame("j", int64(i), rec, true)
				recs = append(recs, journalRec{topic: "j", off: int64(i), rec: rec})
				is.NoErr(j.flush())
			}
			is.NoErr(db.Update(func(tx *bolt.Tx) error {
				_, err := applyRecords(tx, recs[:2])
				return err
			}))
			is.NoErr(j.close())
			is.NoErr(db.Close())

			got, _ := replayed(t, dbPath, jPath, "j")
			is.Equal(len(got), 10)
			for i, m := range got {
				is.Equal(string(m.Value), fmt.Sprintf("v%d", i))
			}
		})
	}
}

// A journal's frames are forgotten once bbolt has committed them, which
// is only safe if the commit was synced: NoSync is refused.
func TestBoltJournalRefusesNoSync(t *testing.T) {
	is := is.New(t)
	db := openTestDB(t, filepath.Join(t.TempDir(), "events.bolt"))
	defer db.Close()
	db.NoSync = true
	opts := testBoltOptions()
	opts.JournalPath = filepath.Join(t.TempDir(), "events.journal")
	b, err := NewBolt(db, opts)
	if err == nil {
		b.Close()
	}
	is.True(errors.Is(err, ErrInvalidArgument))
	_, statErr := os.Stat(opts.JournalPath)
	is.True(errors.Is(statErr, os.ErrNotExist)) // nothing created
}

// Frames are not limited by the MaxMessageBytes of the broker replaying
// them: reopened with a smaller one, a journal written under a larger one
// replays in full (they were acknowledged), and the log says so.
func TestBoltJournalReplayIgnoresMaxMessageBytes(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	dbPath, jPath := filepath.Join(dir, "events.bolt"), filepath.Join(dir, "events.journal")
	db := openTestDB(t, dbPath)
	j, err := openJournal(jPath, db, testBoltOptions().Logger)
	is.NoErr(err)
	big := bytes.Repeat([]byte{'x'}, 4<<10)
	for i := range 3 {
		rec := encodeRecord(&Message{Topic: "j", Value: append(fmt.Appendf(nil, "v%d", i), big...)}, time.Now())
		j.appendFrame("j", int64(i), rec, true)
	}
	is.NoErr(j.flush())
	is.NoErr(j.close())
	is.NoErr(db.Close())

	var logs bytes.Buffer
	db = openTestDB(t, dbPath)
	defer db.Close()
	opts := testBoltOptions()
	opts.JournalPath, opts.MaxMessageBytes = jPath, 1<<10
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	b, err := NewBolt(db, opts)
	is.NoErr(err)
	defer b.Close()
	got, err := b.Read(t.Context(), "j", 0, 10)
	is.NoErr(err)
	is.Equal(len(got), 3)
	for i, m := range got {
		is.True(bytes.HasPrefix(m.Value, fmt.Appendf(nil, "v%dxxx", i)))
		is.Equal(len(m.Value), len(big)+2)
	}
	is.True(strings.Contains(logs.String(), `msg="broker: journal read" path=`+jPath+" groups=3 messages=3 stopped=\"end of file\""))
}

// A frame failing its checksum with frames after it loses those frames:
// replay stops there (it cannot tell what follows is this chain's) and
// warns, with how many groups it replayed and why it stopped.
func TestBoltJournalWarnsOfDamage(t *testing.T) {
	is := is.New(t)
	dbPath, jPath, ends := crashJournal(t, t.TempDir(), 5, 0)
	data, err := os.ReadFile(jPath)
	is.NoErr(err)
	data[ends[0]+journalFrameHeader+3]++ // in frame 1's body
	is.NoErr(os.WriteFile(jPath, data, 0o600))
	var logs bytes.Buffer
	db := openTestDB(t, dbPath)
	defer db.Close()
	opts := testBoltOptions()
	opts.JournalPath = jPath
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	b, err := NewBolt(db, opts)
	is.NoErr(err)
	defer b.Close()
	n, err := b.Latest(t.Context(), "j")
	is.NoErr(err)
	is.Equal(n, int64(1))
	is.True(strings.Contains(logs.String(), `level=WARN msg="broker: journal replay stopped at a bad frame with data after it" path=`+jPath+` groups=1 messages=1 stopped="checksum mismatch" at=`+strconv.FormatInt(ends[0], 10)))
}

// Replay's transactions end at group ends, so a crash during replay never
// leaves part of a Publish call in bbolt.
func TestReplayCutsAtGroupEnds(t *testing.T) {
	is := is.New(t)
	var recs []journalRec
	for i := range 9 { // groups of 3
		recs = append(recs, journalRec{topic: "j", off: int64(i), end: i%3 == 2})
	}
	is.Equal(replayCut(recs, 4), 3)
	is.Equal(replayCut(recs, 6), 6)
	is.Equal(replayCut(recs, 2), 3) // at least one whole group
	is.Equal(replayCut(recs, 100), 9)
	is.Equal(replayCut(recs[3:], 5), 3)
}

// The bytes MaxPendingBytes is compared with are the memory the pending
// records pin: their buffers' capacity (pooled, at least 4 KiB), not their
// lengths.
func TestBoltJournalCountsPendingCapacity(t *testing.T) {
	is := is.New(t)
	e := newBoltEnv(t, journalOptions(t))
	b := e.open()
	ctx := t.Context()
	is.NoErr(b.Publish(ctx, msgs("p", "a0")...))
	waitUntil(t, "a0 applied", func() bool { return inBolt(t, e.db, "p") == 1 })
	tx, err := e.db.Begin(true) // stops the applier
	is.NoErr(err)
	stalled := true
	t.Cleanup(func() { // before Close, which waits for the applier
		if stalled {
			_ = tx.Rollback()
		}
	})
	for i := range 20 {
		is.NoErr(b.Publish(ctx, msgs("p", fmt.Sprintf("small%d", i))...))
	}
	b.pmu.RLock()
	var retained int64
	for _, pt := range b.pending {
		for _, rec := range pt.recs {
			retained += int64(cap(rec))
		}
	}
	b.pmu.RUnlock()
	b.amu.Lock()
	counted := b.pbytes
	b.amu.Unlock()
	is.True(retained >= 20*(4<<10))
	is.True(counted >= retained)
	stalled = false
	is.NoErr(tx.Rollback())
	waitUntil(t, "everything applied", func() bool {
		b.amu.Lock()
		defer b.amu.Unlock()
		return b.pbytes == 0
	})
}
