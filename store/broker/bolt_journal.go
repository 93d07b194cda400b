package broker

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

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
// The writer rewinds to the header once bbolt holds every journaled message
// and the file has passed JournalRewindBytes (or waits for that past four
// times as much), so the file stays a few MiB and is rewritten in place.

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
}

// journal is the open journal file, used by the writer goroutine only.
type journal struct {
	f       *os.File
	pos     int64  // where the next frame goes
	seq     uint64 // sequence number of the next frame
	buf     []byte // frames being written, reused
	rewinds int64
}

// openJournal opens (or creates) the journal at path for db, applies what
// it holds that db lacks, and leaves it ready to be written from the header.
func openJournal(path string, db *bolt.DB, maxFrame int, warn func(msg string, args ...any)) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &journal{f: f}
	if err := j.recover(db, maxFrame, warn); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	var s [8]byte
	if _, err := rand.Read(s[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	j.seq, j.pos = binary.LittleEndian.Uint64(s[:]), journalHeaderSize
	return j, nil
}

// recover replays the journal into db when it belongs to db, and gives it a
// new id otherwise.
func (j *journal) recover(db *bolt.DB, maxFrame int, warn func(msg string, args ...any)) error {
	data, err := io.ReadAll(io.NewSectionReader(j.f, 0, 1<<62))
	if err != nil {
		return err
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
	if len(data) >= journalHeaderSize && string(data[:8]) == journalMagic && len(stored) == 16 && string(data[8:24]) == string(stored) {
		return replayJournal(db, data[journalHeaderSize:], maxFrame)
	}
	if len(data) > journalHeaderSize {
		warn("broker: journal does not belong to this events.bolt (or was never used); discarded", "path", j.f.Name(), "bytes", len(data))
	}
	return j.reset(db)
}

// reset gives the journal a new id, stores it in db first (a crash in
// between leaves a journal that is simply discarded next time) and writes
// the header. The old frames are harmless: replay stops at the header's
// first frame unless it continues the sequence, which a new run never does.
func (j *journal) reset(db *bolt.DB) error {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(topicsBucket)
		if err != nil {
			return err
		}
		return root.Put(journalIDKey, id[:])
	}); err != nil {
		return err
	}
	hdr := make([]byte, journalHeaderSize)
	copy(hdr, journalMagic)
	copy(hdr[8:], id[:])
	// Zero the first frame too, so the old first frame cannot be replayed
	// under the new id.
	hdr = append(hdr, make([]byte, journalFrameHeader)...)
	if _, err := j.f.WriteAt(hdr, 0); err != nil {
		return err
	}
	if err := fdatasync(j.f); err != nil {
		return err
	}
	return syncDir(filepath.Dir(j.f.Name()))
}

// parseJournal returns the frames of data (the journal after its header) up
// to the first torn, corrupt or out-of-sequence one, less the frames of an
// incomplete last group.
func parseJournal(data []byte, maxFrame int) []journalRec {
	var out []journalRec
	var prev uint64
	complete := 0
	for len(data) >= journalFrameHeader {
		n := int(binary.LittleEndian.Uint32(data))
		sum := binary.LittleEndian.Uint32(data[4:])
		if n < journalFrameFixed+1 || n > maxFrame || len(data)-journalFrameHeader < n {
			break
		}
		body := data[journalFrameHeader : journalFrameHeader+n]
		if crc32.Checksum(body, crc32c) != sum {
			break
		}
		seq := binary.LittleEndian.Uint64(body)
		if len(out) > 0 && seq != prev+1 {
			break
		}
		flags, tl := body[8], int(body[9])
		if journalFrameFixed+tl > n {
			break
		}
		topic := string(body[10 : 10+tl])
		off := int64(binary.LittleEndian.Uint64(body[10+tl:]))
		out = append(out, journalRec{topic: topic, off: off, rec: body[10+tl+8:]})
		if flags&journalBatchEnd != 0 {
			complete = len(out)
		}
		prev = seq
		data = data[journalFrameHeader+n:]
	}
	return out[:complete]
}

// replayJournal applies what db lacks of data's frames.
func replayJournal(db *bolt.DB, data []byte, maxFrame int) error {
	recs := parseJournal(data, maxFrame)
	for len(recs) > 0 {
		n := min(len(recs), 10_000)
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
	if _, err := j.f.WriteAt(j.buf, j.pos); err != nil {
		return err
	}
	if err := fdatasync(j.f); err != nil {
		return err
	}
	j.pos += int64(len(j.buf))
	j.buf = j.buf[:0]
	return nil
}

// rewind makes the next frame go right after the header. Callers make sure
// bbolt holds every frame written so far.
func (j *journal) rewind() {
	j.pos = journalHeaderSize
	j.rewinds++
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
