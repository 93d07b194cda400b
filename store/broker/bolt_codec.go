package broker

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// Stored record layout (the offset is the bbolt key, the topic the bucket):
//
//	version byte (1)
//	timestamp   varint, Unix nanoseconds
//	key         uvarint length + bytes
//	headers     uvarint count + count * (uvarint len + name, uvarint len + value), sorted by name
//	value       the remaining bytes
const codecVersion = 1

// offsetKey encodes an offset as a big-endian key so bbolt keeps records in
// offset order.
func offsetKey(off int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(off))
}

// decodeOffset reverses offsetKey; it also decodes stored group offsets.
func decodeOffset(k []byte) (int64, bool) {
	if len(k) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(k)), true
}

func encodedSize(m *Message) int {
	n := 1 + binary.MaxVarintLen64 + binary.MaxVarintLen64 + len(m.Key) + binary.MaxVarintLen64 + len(m.Value)
	for k, v := range m.Headers {
		n += 2*binary.MaxVarintLen64 + len(k) + len(v)
	}
	return n
}

func encodeRecord(m *Message, ts time.Time) []byte {
	return appendRecord(make([]byte, 0, encodedSize(m)), m, ts)
}

// appendRecord appends m's record to b (encodedSize(m) bytes of capacity
// is always enough).
func appendRecord(b []byte, m *Message, ts time.Time) []byte {
	b = append(b, codecVersion)
	b = binary.AppendVarint(b, ts.UnixNano())
	b = appendString(b, m.Key)
	b = binary.AppendUvarint(b, uint64(len(m.Headers)))
	// Sorted on the stack for the usual header counts (a webhook envelope has
	// about 20): publishing allocates only the record itself (BENCHMARKS.md).
	var buf [32]string
	keys := buf[:0]
	for k := range m.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = appendString(b, k)
		b = appendString(b, m.Headers[k])
	}
	return append(b, m.Value...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeRecord copies what it needs out of b, which bbolt only keeps valid for
// the life of the transaction.
func decodeRecord(topic string, off int64, b []byte) (Message, error) {
	m := Message{Topic: topic, Offset: off}
	d := decoder{b: b}
	if v := d.byte(); v != codecVersion {
		return Message{}, fmt.Errorf("%w: %s@%d: version %d", ErrCorrupt, topic, off, v)
	}
	m.Timestamp = time.Unix(0, d.varint())
	m.Key = d.string()
	if n := d.uvarint(); n > 0 && d.err == nil {
		// Each header takes at least two bytes, which bounds n by the input.
		if n > uint64(len(d.b))/2 {
			return Message{}, fmt.Errorf("%w: %s@%d: header count %d", ErrCorrupt, topic, off, n)
		}
		m.Headers = make(map[string]string, n)
		for range n {
			k := d.string()
			m.Headers[k] = d.string()
		}
	}
	if d.err != nil {
		return Message{}, fmt.Errorf("%w: %s@%d: %v", ErrCorrupt, topic, off, d.err)
	}
	if len(d.b) > 0 {
		m.Value = slices.Clone(d.b)
	}
	return m, nil
}

// decoder reads from b and remembers the first error so callers check once.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail("short record")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("length past end of record")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s", msg)
	}
}
