package store

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Stored results (idempotency records) are JSON documents kept for replay
// only; Pack shrinks them with zstd. A packed value starts with the zstd
// frame magic, which no JSON text can start with, so Unpack also reads the
// plain values stored before packing existed (docs/retention.md).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// packMin is the size below which packing is skipped: a zstd frame's
// header and checksum would eat what it saves.
const packMin = 96

// maxUnpacked bounds a decoded value, so a corrupt or hostile row cannot
// make Unpack allocate without limit.
const maxUnpacked = 64 << 20

// codec is created on first use; both coders are safe for concurrent
// EncodeAll/DecodeAll calls and hold no per-call state.
var codec = sync.OnceValues(func() (*zstd.Encoder, *zstd.Decoder) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
	if err != nil {
		panic(fmt.Sprintf("store: zstd encoder with constant options: %v", err)) // unreachable: the options are constants
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxUnpacked))
	if err != nil {
		panic(fmt.Sprintf("store: zstd decoder with constant options: %v", err)) // unreachable: the options are constants
	}
	return enc, dec
})

// Pack returns v compressed when that makes it smaller, else v itself.
func Pack(v []byte) []byte {
	if len(v) < packMin || bytes.HasPrefix(v, zstdMagic) {
		return v
	}
	enc, _ := codec()
	out := enc.EncodeAll(v, make([]byte, 0, len(v)/2))
	if len(out) >= len(v) {
		return v
	}
	return out
}

// Unpack reverses Pack; values that were stored plain come back as they are.
func Unpack(v []byte) ([]byte, error) {
	if !bytes.HasPrefix(v, zstdMagic) {
		return v, nil
	}
	_, dec := codec()
	out, err := dec.DecodeAll(v, nil)
	if err != nil {
		return nil, fmt.Errorf("store: unpack stored value: %w", err)
	}
	return out, nil
}
