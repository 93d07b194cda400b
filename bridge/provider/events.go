package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// rawEvent is the fallback for a stdout line that carries nothing typed.
// Raw must stay valid JSON (it is a json.RawMessage), so non-JSON lines go
// to Text instead.
func rawEvent(line []byte, sessionID string, now time.Time) Event {
	ev := Event{Kind: EventRaw, SessionID: sessionID, Time: now}
	if json.Valid(line) {
		ev.Raw = line
	} else {
		ev.Text = truncateText(string(line), maxTextBytes)
	}
	return ev
}

// decoded reports whether json.Unmarshal filled its target: fully, or
// despite a field of unexpected type (those fields stay zero). A syntax
// error or a non-object line means the line is not for us.
func decoded(err error) bool {
	var typeErr *json.UnmarshalTypeError
	return err == nil || (errors.As(err, &typeErr) && typeErr.Field != "")
}

// fileKeys are tool-input fields that name a file the tool touches
// (Claude Read/Write/Edit/MultiEdit/NotebookEdit and MCP tools alike).
var fileKeys = [...]string{"file_path", "notebook_path"}

// filesFromInput derives touched files from a tool input object.
func filesFromInput(input json.RawMessage) []string {
	if len(input) == 0 || input[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return nil
	}
	var files []string
	for _, k := range fileKeys {
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil && s != "" {
			files = appendUnique(files, s)
		}
	}
	return files
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// contentText renders MCP/Anthropic-style content: a string, or an array of
// blocks whose text parts are joined by newlines. Other blocks are named.
func contentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		switch {
		case b.Type == "text" || (b.Type == "" && b.Text != ""):
			parts = append(parts, b.Text)
		case b.Type != "":
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// toolRef remembers a tool call so its result can be labelled.
type toolRef struct {
	name  string
	files []string
}
