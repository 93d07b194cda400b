package broker

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentbridge/bridge/store/boltcompact"
	bolt "go.etcd.io/bbolt"
)

// The journal (BoltOptions.JournalPath, events.journal in a data directory)
//
// A bbolt commit costs two fdatasyncs (its data pages, then its meta page)
// plus rewriting the B+tree's changed pages; a publisher that waits for it
// waits for both. With a journal, the writer appends each group of publishes
// to one file and fdatasyncs it once, and the publishers are answered then:
// their messages are durable. A second goroutine applies the same messages
// to bbolt in larger transactions (each still fsynced as usual, so
// events.bolt stays a consistent, durable file on its own) while the next
// group is being journaled. Until a message is in bbolt, readers find it in
// memory (Bolt.pending); subscribers only ever see journaled messages.
//
// File layout:
//
//	header   64 bytes: "ABJRNL01", a random 16-byte id, zeros
//	frames   u32 body length | u32 CRC-32C of the body | body
//	body     u64 sequence | u8 flags | u8 topic length | topic | u64 offset | record (bolt_codec.go)
//
// Flag journalBatchEnd marks the last frame of a group written by one
// fdatasync: replay applies whole groups only, so a torn write never
// leaves part of a Publish call (whose messages commit together).
//
// The id is also stored in bbolt (key "!journal" of broker.topics, which no
// topic can be called): a journal whose id does not match is not this
// events.bolt's (a file moved aside, say) and is discarded rather than
// replayed. Frames carry consecutive sequence numbers, starting at a random
// value each time the broker opens; replay reads frames from the header on
// and stops at the first one that is short, fails its checksum or does not
// continue the sequence (a torn write, or what an earlier run left behind).
// Each replayed frame is applied when its offset is the topic's next one in
// bbolt and skipped when bbolt already has it, so replay is idempotent.
//
// The journal is two files, JournalPath and JournalPath+".1", each with
// its own header and chain of frames. The writer appends to one; once that
// has passed JournalRewindBytes and bbolt holds everything in the other
// (usually long applied: it was written a whole file ago; if not, the
// applier is hurried and the current file grows until it is), it switches
// to the other and writes it again from its header. So a file stays near
// JournalRewindBytes while the applier keeps up, and grows by at most
// MaxPendingBytes when it does not; the writer never waits for the applier
// (only MaxPendingBytes stops it). Replay applies the two files' chains oldest
// first (sequence numbers only increase within a run, and a chain from an
// earlier run was applied when the broker last opened).

const (
	journalMagic       = "ABJRNL01"
	journalHeaderSize  = 64
	journalFrameHeader = 8
	// journalFrameFixed is a body's size without its topic and record.
	journalFrameFixed = 8 + 1 + 1 + 8
	// journalBatchEnd flags the last frame of a group.
	journalBatchEnd = 1
)

// journalIDKey holds the journal's id in broker.topics: '!' is not a legal
// topic character and the value is not a bucket, so topic listings skip it.
var journalIDKey = []byte("!journal")

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// journalRec is one journaled message.
type journalRec struct {
	topic string
	off   int64
	rec   []byte
	seq   uint64 // its frame's sequence number (replay only)
	end   bool   // the last frame of its group (replay only)
}

// journal is the open journal files, used by the writer goroutine only.
type journal struct {
	f       [2]*os.File
	cur     int       // the file being written
	pos     int64     // where the next frame goes in it
	seq     uint64    // sequence number of the next frame
	last    [2]uint64 // per file, the sequence after its last frame written in this run (0: none)
	buf     []byte    // frames being written, reused
	rewinds int64     // switches from one file to the other
}

// journalFiles are the two files of the journal at path.
func journalFiles(path string) [2]string { return [2]string{path, path + ".1"} }

// openJournal opens (or creates) the journal at path for db, applies what
// it holds that db lacks, and leaves it ready to be written.
func openJournal(path string, db *bolt.DB, log *slog.Logger) (*journal, error) {
	j := &journal{}
	for i, name := range journalFiles(path) {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			j.close()
			return nil, fmt.Errorf("journal: %w", err)
		}
		j.f[i] = f
	}
	if err := j.recover(db, log); err != nil {
		j.close()
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	var s [8]byte
	if _, err := rand.Read(s[:]); err != nil {
		j.close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	// Below 2^62: the sequence never wraps within a run, so comparing
	// sequences orders frames.
	j.seq, j.pos = binary.LittleEndian.Uint64(s[:])>>2, journalHeaderSize
	return j, nil
}

func (j *journal) close() error {
	var first error
	for _, f := range j.f {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// recover replays each file that belongs to db (oldest chain first) and
// gives the others db's journal id, or a new id to both when db has none.
func (j *journal) recover(db *bolt.DB, log *slog.Logger) error {
	var data [2][]byte
	for i, f := range j.f {
		var err error
		if data[i], err = io.ReadAll(io.NewSectionReader(f, 0, 1<<62)); err != nil {
			return err
		}
	}
	var stored []byte
	if err := db.View(func(tx *bolt.Tx) error {
		if root := tx.Bucket(topicsBucket); root != nil {
			stored = append([]byte(nil), root.Get(journalIDKey)...)
		}
		return nil
	}); err != nil {
		return err
	}
	if len(stored) != 16 {
		// A new events.bolt (or one from before the journal): a new id
		// for it and both files.
		for i, d := range data {
			if len(d) > journalHeaderSize {
				log.Warn("broker: journal does not belong to this events.bolt; discarded", "path", j.f[i].Name(), "bytes", len(d))
			}
		}
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			return err
		}
		// The id goes to bbolt first: a crash before the headers are
		// written leaves files that are simply initialised next time.
		if err := db.Update(func(tx *bolt.Tx) error {
			root, err := tx.CreateBucketIfNotExists(topicsBucket)
			if err != nil {
				return err
			}
			return root.Put(journalIDKey, id[:])
		}); err != nil {
			return err
		}
		stored = id[:]
		data = [2][]byte{}
	}
	var chains [][]journalRec
	for i, d := range data {
		if len(d) >= journalHeaderSize && string(d[:8]) == journalMagic && string(d[8:24]) == string(stored) {
			p := parseJournal(d[journalHeaderSize:])
			// How far replay got, and why it stopped there: a frame of an
			// earlier chain or zeros are the ordinary end; a bad frame
			// with data after it may be damage, and everything after it
			// is lost, so it is a warning.
			args := []any{"path", j.f[i].Name(), "groups", p.groups, "messages", len(p.recs), "stopped", p.stop, "at", journalHeaderSize + p.at}
			if p.damaged {
				log.Warn("broker: journal replay stopped at a bad frame with data after it", args...)
			} else {
				log.Info("broker: journal read", args...)
			}
			chains = append(chains, p.recs)
			continue
		}
		if len(d) > journalHeaderSize {
			log.Warn("broker: journal does not belong to this events.bolt; discarded", "path", j.f[i].Name(), "bytes", len(d))
		}
		if err := initJournalFile(j.f[i], stored); err != nil {
			return err
		}
	}
	if len(chains) == 2 && len(chains[0]) > 0 && len(chains[1]) > 0 && chains[1][0].seq < chains[0][0].seq {
		chains[0], chains[1] = chains[1], chains[0]
	}
	for _, c := range chains {
		if err := replayJournal(db, c); err != nil {
			return err
		}
	}
	return nil
}

// initJournalFile writes the header of an empty journal file with id. The
// old frames are harmless: the first frame's header is zeroed, and replay
// stops there.
func initJournalFile(f *os.File, id []byte) error {
	hdr := make([]byte, journalHeaderSize+journalFrameHeader)
	copy(hdr, journalMagic)
	copy(hdr[8:], id)
	if _, err := f.WriteAt(hdr, 0); err != nil {
		return err
	}
	if err := fdatasync(f); err != nil {
		return err
	}
	return boltcompact.SyncDir(filepath.Dir(f.Name()))
}

// parsedJournal is what parseJournal found in one file.
type parsedJournal struct {
	recs    []journalRec // the frames of its whole groups
	groups  int          // how many groups recs holds
	stop    string       // why reading stopped
	at      int64        // where (from the end of the header)
	damaged bool         // a frame failed its checks and non-zero bytes follow it
}

// parseJournal returns the frames of data (the journal after its header) up
// to the first torn, corrupt or out-of-sequence one, less the frames of an
// incomplete last group. A frame may be as long as the data left: its size
// is not checked against the current MaxMessageBytes, which may be smaller
// than the one it was written under (the checksum catches garbage).
func parseJournal(data []byte) parsedJournal {
	var p parsedJournal
	var prev uint64
	complete, completeAt := 0, int64(0)
	pos := int64(0)
	// bad stops at a frame that fails its checks, skipping bytes of its
	// own: a torn last write leaves nothing after the frame it was writing
	// (or stale frames of the file's previous use, which cannot be told
	// from damage).
	bad := func(why string, skip int) {
		p.stop = why
		rest := data[min(len(data), skip):]
		p.damaged = slices.ContainsFunc(rest, func(c byte) bool { return c != 0 })
	}
	for {
		if len(data) < journalFrameHeader {
			p.stop = "end of file"
			break
		}
		n := int(binary.LittleEndian.Uint32(data))
		sum := binary.LittleEndian.Uint32(data[4:])
		if n == 0 && sum == 0 {
			p.stop = "end of chain"
			break
		}
		if n < journalFrameFixed+1 {
			bad("bad frame length", journalFrameHeader)
			break
		}
		if len(data)-journalFrameHeader < n {
			p.stop = "torn frame at the end of the file"
			break
		}
		body := data[journalFrameHeader : journalFrameHeader+n]
		if crc32.Checksum(body, crc32c) != sum {
			bad("checksum mismatch", journalFrameHeader+n)
			break
		}
		seq := binary.LittleEndian.Uint64(body)
		if len(p.recs) > 0 && seq != prev+1 {
			p.stop = "end of chain" // a frame written before the file was reused
			break
		}
		flags, tl := body[8], int(body[9])
		if journalFrameFixed+tl > n {
			bad("bad topic length", journalFrameHeader+n)
			break
		}
		topic := string(body[10 : 10+tl])
		off := int64(binary.LittleEndian.Uint64(body[10+tl:]))
		end := flags&journalBatchEnd != 0
		p.recs = append(p.recs, journalRec{topic: topic, off: off, rec: body[10+tl+8:], seq: seq, end: end})
		prev = seq
		data = data[journalFrameHeader+n:]
		pos += int64(journalFrameHeader + n)
		if end {
			complete, completeAt = len(p.recs), pos
			p.groups++
		}
	}
	if complete < len(p.recs) {
		p.stop += " (after an incomplete group)"
	}
	p.recs, p.at = p.recs[:complete], completeAt
	return p
}

// maxReplayMessages bounds one bbolt transaction of replay (whole groups,
// so at least one group).
const maxReplayMessages = 10_000

// replayJournal applies what db lacks of recs, in transactions that end
// at group ends: a crash during replay never leaves part of a Publish call
// in bbolt.
func replayJournal(db *bolt.DB, recs []journalRec) error {
	for len(recs) > 0 {
		n := replayCut(recs, maxReplayMessages)
		if err := db.Update(func(tx *bolt.Tx) error {
			_, err := applyRecords(tx, recs[:n])
			return err
		}); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		recs = recs[n:]
	}
	return nil
}

// replayCut returns how many of recs (whole groups) the next replay
// transaction takes: the most whole groups within limit, at least one.
func replayCut(recs []journalRec, limit int) int {
	cut := 0
	for i, r := range recs {
		if !r.end {
			continue
		}
		if cut > 0 && i+1 > limit {
			break
		}
		cut = i + 1
	}
	if cut == 0 {
		return len(recs) // no group end: parseJournal never returns that
	}
	return cut
}

// applyRecords puts recs into their topics in tx: a record bbolt already
// holds (offset below the topic's sequence) is skipped, the next one is
// added, and a gap is corruption. It returns the new end of each topic.
func applyRecords(tx *bolt.Tx, recs []journalRec) (map[string]int64, error) {
	root, err := tx.CreateBucketIfNotExists(topicsBucket)
	if err != nil {
		return nil, err
	}
	ends := make(map[string]int64)
	var last string
	var tb *bolt.Bucket
	for _, r := range recs {
		if tb == nil || r.topic != last {
			if err := ValidateTopic(r.topic); err != nil {
				return nil, fmt.Errorf("%w: journaled %v", ErrCorrupt, err)
			}
			if tb, err = root.CreateBucketIfNotExists([]byte(r.topic)); err != nil {
				return nil, fmt.Errorf("topic %s: %w", r.topic, err)
			}
			tb.FillPercent = 1 // append-only keys: full pages waste no space
			last = r.topic
		}
		seq := int64(tb.Sequence())
		switch {
		case r.off < seq:
			continue
		case r.off > seq:
			return nil, fmt.Errorf("%w: topic %s: journaled offset %d after %d", ErrCorrupt, r.topic, r.off, seq)
		}
		if err := tb.Put(offsetKey(r.off), r.rec); err != nil {
			return nil, fmt.Errorf("topic %s: %w", r.topic, err)
		}
		if err := tb.SetSequence(uint64(r.off + 1)); err != nil {
			return nil, fmt.Errorf("topic %s: %w", r.topic, err)
		}
		ends[r.topic] = r.off + 1
	}
	return ends, nil
}

// appendFrame adds one frame to j.buf; last marks the group's last frame.
func (j *journal) appendFrame(topic string, off int64, rec []byte, last bool) {
	n := journalFrameFixed + len(topic) + len(rec)
	b := binary.LittleEndian.AppendUint32(j.buf, uint32(n))
	b = binary.LittleEndian.AppendUint32(b, 0) // checksum, below
	start := len(b)
	b = binary.LittleEndian.AppendUint64(b, j.seq)
	var flags byte
	if last {
		flags = journalBatchEnd
	}
	b = append(b, flags, byte(len(topic)))
	b = append(b, topic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(off))
	b = append(b, rec...)
	binary.LittleEndian.PutUint32(b[start-4:], crc32.Checksum(b[start:], crc32c))
	j.buf = b
	j.seq++
}

// flush writes j.buf at the current position and syncs it.
func (j *journal) flush() error {
	f := j.f[j.cur]
	if _, err := f.WriteAt(j.buf, j.pos); err != nil {
		return err
	}
	if err := fdatasync(f); err != nil {
		return err
	}
	j.pos += int64(len(j.buf))
	j.buf = j.buf[:0]
	j.last[j.cur] = j.seq
	return nil
}

// switchFile makes the next frame go right after the other file's header.
// Callers make sure bbolt holds every frame of that file.
func (j *journal) switchFile() {
	j.cur = 1 - j.cur
	j.pos = journalHeaderSize
	j.rewinds++
}
