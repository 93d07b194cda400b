package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestRecordRoundTrip(t *testing.T) {
	ts := time.Unix(1700000000, 123456789)
	tests := []struct {
		name string
		in   Message
	}{
		{"empty", Message{}},
		{"value", Message{Value: []byte("hello")}},
		{"key and headers", Message{Key: "k", Headers: map[string]string{"b": "2", "a": "", "": "empty name"}, Value: []byte{0, 1, 2}}},
		{"large", Message{Key: strings.Repeat("k", 300), Value: []byte(strings.Repeat("v", 70000))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			rec := encodeRecord(&tt.in, ts)
			is.True(len(rec) <= encodedSize(&tt.in))
			got, err := decodeRecord("topic", 42, rec)
			is.NoErr(err)
			is.Equal(got.Topic, "topic")
			is.Equal(got.Offset, int64(42))
			is.True(got.Timestamp.Equal(ts))
			is.Equal(got.Key, tt.in.Key)
			is.Equal(len(got.Headers), len(tt.in.Headers))
			for k, v := range tt.in.Headers {
				is.Equal(got.Headers[k], v)
			}
			is.Equal(string(got.Value), string(tt.in.Value))
		})
	}
}

func TestDecodeRecordRejectsTruncation(t *testing.T) {
	is := is.New(t)
	m := Message{Key: "key", Headers: map[string]string{"h": "v"}}
	rec := encodeRecord(&m, time.Now())
	// Without a value every byte is structure: each shorter prefix is invalid.
	for n := range len(rec) {
		_, err := decodeRecord("t", 0, rec[:n])
		is.True(errors.Is(err, ErrCorrupt))
	}
	_, err := decodeRecord("t", 0, []byte{codecVersion, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	is.True(errors.Is(err, ErrCorrupt)) // absurd header count
}

func TestOffsetKeyOrder(t *testing.T) {
	is := is.New(t)
	prev := offsetKey(0)
	for _, off := range []int64{1, 255, 256, 1 << 32, 1<<62 + 7} {
		k := offsetKey(off)
		is.True(string(prev) < string(k)) // byte order is offset order
		got, ok := decodeOffset(k)
		is.True(ok)
		is.Equal(got, off)
		prev = k
	}
	_, ok := decodeOffset([]byte{1, 2})
	is.True(!ok)
}

func FuzzDecodeRecord(f *testing.F) {
	m := Message{Key: "k", Headers: map[string]string{"a": "b"}, Value: []byte("v")}
	f.Add(encodeRecord(&m, time.Unix(1, 0)))
	f.Add([]byte{codecVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeRecord("t", 1, b)
		if err != nil {
			return
		}
		// Whatever decodes must encode back to a record that decodes the same.
		again, err := decodeRecord("t", 1, encodeRecord(&got, got.Timestamp))
		if err != nil {
			t.Fatal(err)
		}
		if again.Key != got.Key || string(again.Value) != string(got.Value) || len(again.Headers) != len(got.Headers) || !again.Timestamp.Equal(got.Timestamp) {
			t.Fatalf("round trip changed %+v to %+v", got, again)
		}
	})
}
