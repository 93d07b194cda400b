package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Content-Encoding values of compressed envelopes.
const (
	encodingGzip = "gzip"
	encodingZstd = "zstd"
	encodingLZ4  = "lz4"
)

// maxDecompressed bounds what a consumer inflates, so a crafted message on a
// topic cannot exhaust memory.
const maxDecompressed = 2 * hardMaxPayload

func (c Compression) validate() error {
	if c.MinSize < 0 {
		return errors.New("min-size must not be negative")
	}
	switch strings.ToUpper(c.Algorithm) {
	case "GZIP", "LZ4":
		if c.Level < 1 || c.Level > 9 {
			return fmt.Errorf("level %d: %s levels are 1-9", c.Level, strings.ToUpper(c.Algorithm))
		}
	case "ZSTD":
		if c.Level < 1 || c.Level > 22 {
			return fmt.Errorf("level %d: ZSTD levels are 1-22", c.Level)
		}
	default:
		return fmt.Errorf("algorithm %q is not GZIP, ZSTD or LZ4", c.Algorithm)
	}
	return nil
}

// compressor compresses payloads of at least minSize bytes. Encoders are
// pooled (gzip, lz4) or shared (zstd's EncodeAll is concurrency-safe).
type compressor struct {
	enabled  bool
	minSize  int
	encoding string
	level    int
	gzipPool sync.Pool
	lz4Pool  sync.Pool
	zenc     *zstd.Encoder
	zdec     *zstd.Decoder // DecodeAll is concurrency-safe
}

func newCompressor(c Compression) (*compressor, error) {
	cp := &compressor{enabled: c.Enabled, minSize: c.MinSize, level: c.Level}
	// Consumers may meet compressed messages whatever this process's
	// setting, so the decoder always exists.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxDecompressed))
	if err != nil {
		return nil, fmt.Errorf("ingest: zstd: %w", err)
	}
	cp.zdec = dec
	if !c.Enabled {
		return cp, nil
	}
	switch strings.ToUpper(c.Algorithm) {
	case "GZIP":
		cp.encoding = encodingGzip
	case "ZSTD":
		cp.encoding = encodingZstd
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(c.Level)), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("ingest: zstd: %w", err)
		}
		cp.zenc = enc
	case "LZ4":
		cp.encoding = encodingLZ4
	default:
		return nil, fmt.Errorf("ingest: compression algorithm %q", c.Algorithm)
	}
	return cp, nil
}

// compress returns the payload to publish and its Content-Encoding ("" when
// it was left as is: disabled, under min-size, or not smaller compressed).
func (c *compressor) compress(p []byte) ([]byte, string, error) {
	if !c.enabled || len(p) < c.minSize || len(p) == 0 {
		return p, "", nil
	}
	var out []byte
	switch c.encoding {
	case encodingZstd:
		out = c.zenc.EncodeAll(p, make([]byte, 0, len(p)/2))
	case encodingGzip:
		var buf bytes.Buffer
		buf.Grow(len(p) / 2)
		w, _ := c.gzipPool.Get().(*gzip.Writer)
		if w == nil {
			var err error
			if w, err = gzip.NewWriterLevel(&buf, c.level); err != nil {
				return nil, "", fmt.Errorf("ingest: gzip: %w", err)
			}
		} else {
			w.Reset(&buf)
		}
		_, err := w.Write(p)
		if err == nil {
			err = w.Close()
		}
		c.gzipPool.Put(w)
		if err != nil {
			return nil, "", fmt.Errorf("ingest: gzip: %w", err)
		}
		out = buf.Bytes()
	case encodingLZ4:
		var buf bytes.Buffer
		buf.Grow(len(p) / 2)
		w, _ := c.lz4Pool.Get().(*lz4.Writer)
		if w == nil {
			w = lz4.NewWriter(&buf)
		} else {
			w.Reset(&buf)
		}
		err := w.Apply(lz4.CompressionLevelOption(lz4Level(c.level)))
		if err == nil {
			_, err = w.Write(p)
		}
		if err == nil {
			err = w.Close()
		}
		c.lz4Pool.Put(w)
		if err != nil {
			return nil, "", fmt.Errorf("ingest: lz4: %w", err)
		}
		out = buf.Bytes()
	}
	if len(out) >= len(p) {
		// Incompressible (already compressed, random): publish as is.
		return p, "", nil
	}
	return out, c.encoding, nil
}

func lz4Level(n int) lz4.CompressionLevel {
	levels := []lz4.CompressionLevel{lz4.Fast, lz4.Level1, lz4.Level2, lz4.Level3, lz4.Level4, lz4.Level5, lz4.Level6, lz4.Level7, lz4.Level8, lz4.Level9}
	if n < 0 || n >= len(levels) {
		return lz4.Fast
	}
	return levels[n]
}

func (c *compressor) Close() {
	if c.zenc != nil {
		c.zenc.Close()
	}
	c.zdec.Close()
}

// decompress reverses compress for a Content-Encoding, bounded by maxDecompressed.
func (c *compressor) decompress(p []byte, encoding string) ([]byte, error) {
	var r io.Reader
	switch encoding {
	case "":
		return p, nil
	case encodingZstd:
		out, err := c.zdec.DecodeAll(p, nil)
		if err != nil {
			return nil, fmt.Errorf("ingest: zstd: %w", err)
		}
		return out, nil
	case encodingGzip:
		zr, err := gzip.NewReader(bytes.NewReader(p))
		if err != nil {
			return nil, fmt.Errorf("ingest: gzip: %w", err)
		}
		r = zr
	case encodingLZ4:
		r = lz4.NewReader(bytes.NewReader(p))
	default:
		return nil, fmt.Errorf("ingest: unknown content encoding %q", encoding)
	}
	out, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, fmt.Errorf("ingest: %s: %w", encoding, err)
	}
	if len(out) > maxDecompressed {
		return nil, fmt.Errorf("ingest: %s: payload inflates past %d bytes", encoding, maxDecompressed)
	}
	return out, nil
}
