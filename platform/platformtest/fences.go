package platformtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// Fence is one fenced code block of a Markdown document: its info string
// ("yaml", "json catalog"), first line number and body.
type Fence struct {
	Info string
	Line int
	Body string
}

// Fences reads the fenced code blocks of the Markdown file at path, for
// tests that run the examples of the project's docs
// (docs/workflow-language.md).
func Fences(path string) ([]Fence, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Fence
	var cur *Fence
	var body strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &Fence{Info: strings.TrimSpace(strings.TrimPrefix(line, "```")), Line: n}
			body.Reset()
		case cur != nil && line == "```":
			cur.Body = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
		}
	}
	if cur != nil {
		return out, fmt.Errorf("%s: unterminated code fence at line %d", path, cur.Line)
	}
	return out, sc.Err()
}
