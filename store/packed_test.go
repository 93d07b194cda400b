package store

import (
	"bytes"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestPackRoundTrip(t *testing.T) {
	is := is.New(t)
	for _, v := range [][]byte{nil, []byte(`{}`), []byte(strings.Repeat(`{"a":"b"},`, 100)), bytes.Repeat([]byte{0x28}, 500)} {
		got, err := Unpack(Pack(v))
		is.NoErr(err)
		is.Equal(string(got), string(v))
	}
	// Small values stay plain; large compressible ones shrink to a zstd frame.
	is.Equal(string(Pack([]byte(`{"id":1}`))), `{"id":1}`)
	big := []byte(strings.Repeat(`{"status":"succeeded"},`, 50))
	p := Pack(big)
	is.True(bytes.HasPrefix(p, zstdMagic))
	is.True(len(p) < len(big)/4)
}

func TestUnpackRefusesCorruptFrame(t *testing.T) {
	is := is.New(t)
	p := Pack([]byte(strings.Repeat(`{"status":"succeeded"},`, 50)))
	p[len(p)-1] ^= 0xff // break the checksum
	_, err := Unpack(p)
	is.True(err != nil)
}
