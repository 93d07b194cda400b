package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

type readResult struct {
	line    string
	skipped int
}

func readAll(t *testing.T, input string, max int) []readResult {
	t.Helper()
	// Tiny limits also shrink bufio's buffer, exercising ErrBufferFull.
	lr := newLineReader(strings.NewReader(input), max)
	var out []readResult
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("reader does not terminate")
		}
		line, skipped, err := lr.next()
		if line != nil || skipped > 0 {
			out = append(out, readResult{string(line), skipped})
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("y", 100)
	cases := []struct {
		name  string
		input string
		max   int
		want  []readResult
	}{
		{"empty", "", 10, nil},
		{"lines", "a\nbb\n", 10, []readResult{{"a", 0}, {"bb", 0}}},
		{"crlf", "a\r\nb\r\n", 10, []readResult{{"a", 0}, {"b", 0}}},
		{"blank lines kept", "\n\nx\n", 10, []readResult{{"", 0}, {"", 0}, {"x", 0}}},
		{"unterminated last line", "a\nlast", 10, []readResult{{"a", 0}, {"last", 0}}},
		{"exactly max", "0123456789\n", 10, []readResult{{"0123456789", 0}}},
		{"exactly max with crlf", "0123456789\r\n", 10, []readResult{{"0123456789", 0}}},
		{"one over max", "01234567890\nok\n", 10, []readResult{{"", 12}, {"ok", 0}}},
		// Longer than bufio's buffer: exercises ErrBufferFull continuation.
		{"oversized across buffer", long + "\nafter\n", 20, []readResult{{"", 101}, {"after", 0}}},
		{"oversized unterminated", long, 20, []readResult{{"", 100}}},
		{"long line within limit", long + "\n", 200, []readResult{{long, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := readAll(t, tc.input, tc.max)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("line %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestLineReaderLinesAreOwned(t *testing.T) {
	lr := newLineReader(strings.NewReader("first\nsecond\n"), 1<<20)
	a, _, _ := lr.next()
	b, _, _ := lr.next()
	if string(a) != "first" || string(b) != "second" {
		t.Fatalf("got %q %q: a line was overwritten by the next read", a, b)
	}
}

func TestLineReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	lr := newLineReader(io.MultiReader(strings.NewReader("ok\npartial"), errReader{boom}), 100)
	if line, _, err := lr.next(); string(line) != "ok" || err != nil {
		t.Fatalf("got %q %v", line, err)
	}
	if _, _, err := lr.next(); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestTailBuffer(t *testing.T) {
	tb := newTailBuffer(8)
	for _, s := range []string{"abc", "defg", "hijkl"} {
		_, _ = tb.Write([]byte(s))
	}
	if got := tb.String(); got != "efghijkl" {
		t.Errorf("got %q", got)
	}
	_, _ = tb.Write([]byte("0123456789XYZ")) // larger than the buffer
	if got := tb.String(); got != "56789XYZ" {
		t.Errorf("got %q", got)
	}
	// Many small writes keep memory bounded.
	for i := 0; i < 10000; i++ {
		_, _ = tb.Write([]byte("z"))
	}
	if len(tb.data) > 2*tb.max || tb.String() != "zzzzzzzz" {
		t.Errorf("len(data)=%d String=%q", len(tb.data), tb.String())
	}
	// A cut inside a multi-byte rune is dropped, not returned as garbage.
	tb = newTailBuffer(4)
	_, _ = tb.Write([]byte("aé€"))
	if got := tb.String(); !utf8.ValidString(got) || got != "€" {
		t.Errorf("got %q", got)
	}
}

func TestLastLinesAndTruncate(t *testing.T) {
	if got := lastLines("a\n\nb\nc\n\n", 2, 100); got != "b | c" {
		t.Errorf("lastLines = %q", got)
	}
	if got := lastLines("", 3, 100); got != "" {
		t.Errorf("lastLines empty = %q", got)
	}
	if got := lastLines("xxxxxxxxxx", 1, 4); got != "…xxxx" {
		t.Errorf("lastLines bounded = %q", got)
	}
	if got := truncateText("héllo", 2); got != "h…[truncated]" {
		t.Errorf("truncateText = %q", got)
	}
}

// fuzzSeeds returns every transcript line plus awkward inputs.
func fuzzSeeds(f *testing.F, dialect string) {
	for _, name := range []string{"plain", "tools", "error"} {
		b, err := os.ReadFile(transcriptPath(dialect, name))
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range bytes.Split(b, []byte("\n")) {
			f.Add(l)
		}
	}
	for _, s := range []string{
		"", "null", "42", `"s"`, "[]", "{", `{"type":null}`, `{"type":"assistant","message":null}`,
		`{"type":"assistant","message":{"content":[null,1,"x",{"type":"tool_use","input":5}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","content":{"a":1}}]}}`,
		`{"type":"result","usage":[],"errors":{"x":1}}`,
		`{"type":"item.completed","item":{"type":"file_change","changes":[null,{"path":5}]}}`,
		`{"type":"item.completed","item":{"type":"mcp_tool_call","result":{"content":"x"},"arguments":"[1]"}}`,
		`{"type":"turn.failed","error":"x"}`, "\xff\xfe{", `{"type":"thread.started","thread_id":""}`,
	} {
		f.Add([]byte(s))
	}
}

func fuzzParser(t *testing.T, p lineParser, data []byte) {
	now := time.Unix(0, 0)
	// Feed each line and the whole input as one line, on the same parser,
	// to exercise state carried between lines.
	lines := append(bytes.Split(data, []byte("\n")), data)
	for _, line := range lines {
		evs := p.parseLine(line, now)
		if len(bytes.TrimSpace(line)) > 0 && len(evs) == 0 {
			t.Fatalf("no event for non-blank line %q", line)
		}
		for _, ev := range evs {
			if ev.Kind == "" {
				t.Fatalf("event without kind for %q", line)
			}
			if ev.Raw != nil && !json.Valid(ev.Raw) {
				t.Fatalf("invalid Raw for %q", line)
			}
			if (ev.Kind == EventToolCall || ev.Kind == EventToolResult) && ev.Tool == nil {
				t.Fatalf("%s without Tool for %q", ev.Kind, line)
			}
			if ev.Kind == EventUsage && ev.Usage == nil {
				t.Fatalf("usage without Usage for %q", line)
			}
			if ev.Tool != nil && ev.Tool.Input != nil && !json.Valid(ev.Tool.Input) {
				t.Fatalf("invalid tool input for %q", line)
			}
			if _, err := json.Marshal(ev); err != nil {
				t.Fatalf("event does not marshal: %v", err)
			}
		}
	}
	_ = p.finish(0, "", now)
}

func FuzzClaudeParser(f *testing.F) {
	fuzzSeeds(f, "claude")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParser(t, newClaudeParser(), data) })
}

func FuzzCodexParser(f *testing.F) {
	fuzzSeeds(f, "codex")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParser(t, newCodexParser(), data) })
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\nlong line here\n"), uint16(4))
	f.Add([]byte(strings.Repeat("x", 300)+"\n"), uint16(20))
	f.Fuzz(func(t *testing.T, data []byte, max uint16) {
		limit := int(max%512) + 1
		lr := newLineReader(bytes.NewReader(data), limit)
		total := 0
		for i := 0; i <= len(data)+1; i++ {
			line, skipped, err := lr.next()
			if len(line) > limit {
				t.Fatalf("line of %d bytes exceeds limit %d", len(line), limit)
			}
			total += len(line) + skipped
			if errors.Is(err, io.EOF) {
				if total > len(data) {
					t.Fatalf("accounted %d bytes of %d", total, len(data))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Fatal("reader did not reach EOF")
	})
}
