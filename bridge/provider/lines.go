package provider

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// maxTextBytes bounds Text of raw (non-JSON) and log events so that one
// runaway line cannot bloat every consumer of the event stream.
const maxTextBytes = 64 << 10

// lineReader splits a stream into lines with a hard per-line limit, so a
// misbehaving agent cannot make the bridge buffer unbounded memory.
type lineReader struct {
	br  *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	size := 64 << 10
	if max < size {
		size = max + 2 // room for "\r\n"; bufio enforces a minimum of 16
	}
	return &lineReader{br: bufio.NewReaderSize(r, size), max: max}
}

// next returns the next line without its "\n" or "\r\n" terminator, in a
// freshly allocated slice the caller owns. A line longer than the limit is
// consumed and discarded: next then returns a nil line and its size in
// skipped. At the end of input next returns io.EOF, after a final
// unterminated line if any.
func (l *lineReader) next() (line []byte, skipped int, err error) {
	var buf []byte
	n, over := 0, false
	for {
		chunk, rerr := l.br.ReadSlice('\n')
		n += len(chunk)
		if !over {
			if len(buf)+len(chunk) > l.max+2 {
				over, buf = true, nil
			} else if buf == nil && rerr == nil {
				buf = append(make([]byte, 0, len(chunk)), chunk...) // common case: one copy
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		if n == 0 && rerr != nil {
			return nil, 0, rerr
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		if !over && len(buf) > l.max {
			over = true
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, 0, rerr // broken pipe etc.: drop the partial line
		}
		// An unterminated last line is still delivered; the following call
		// reports io.EOF.
		if over {
			return nil, n, nil
		}
		if buf == nil {
			buf = []byte{}
		}
		return buf, 0, nil
	}
}

// truncateText bounds s to max bytes on a rune boundary.
func truncateText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[truncated]"
}

// lastLines returns up to n trailing non-blank lines of s, joined by " | "
// and bounded to max bytes, for compact error messages.
func lastLines(s string, n, max int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if t := strings.TrimSpace(lines[i]); t != "" {
			out = append(out, t)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	joined := strings.Join(out, " | ")
	if len(joined) > max {
		cut := len(joined) - max
		for cut < len(joined) && !utf8.RuneStart(joined[cut]) {
			cut++
		}
		joined = "…" + joined[cut:]
	}
	return joined
}

// tailBuffer keeps the last max bytes written to it (stderr excerpt).
type tailBuffer struct {
	max  int
	data []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.data = append(t.data[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	t.data = append(t.data, p...)
	// Compact only once the slack reaches max, keeping writes amortized O(1).
	if len(t.data) > 2*t.max {
		k := copy(t.data, t.data[len(t.data)-t.max:])
		t.data = t.data[:k]
	}
	return n, nil
}

func (t *tailBuffer) String() string {
	d := t.data
	if len(d) > t.max {
		d = d[len(d)-t.max:]
	}
	// The cut may land inside a UTF-8 sequence; drop the partial rune.
	for len(d) > 0 && !utf8.RuneStart(d[0]) {
		d = d[1:]
	}
	return string(d)
}
