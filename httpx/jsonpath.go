package httpx

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// pathAt names the innermost value of data that contains byte offset, as
// a.b[2].c: where a json.UnmarshalTypeError happened. The error's own Field
// names struct fields only, so a wrong value inside a map or array was
// blamed on the map or array itself ("metadata" for {"metadata":{"k":1}}).
// It returns "" when data cannot be walked to offset.
func pathAt(data []byte, offset int64) string {
	type frame struct {
		path  string
		start int64 // offset before the opening delimiter
		obj   bool
		key   string // object: the last key read; "" before the first
		isKey bool   // object: the next string token is a key
		index int    // array: the index of the next element
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	// child is the path of the value about to be read.
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.obj {
			if f.path == "" {
				return f.key
			}
			return f.path + "." + f.key
		}
		return f.path + "[" + strconv.Itoa(f.index) + "]"
	}
	// done moves the enclosing frame past the value just read.
	done := func() {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.obj {
			f.isKey = true
		} else {
			f.index++
		}
	}
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		after := dec.InputOffset()
		if len(stack) > 0 {
			if f := stack[len(stack)-1]; f.obj && f.isKey {
				if k, ok := tok.(string); ok {
					f.key, f.isKey = k, false
					continue
				}
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, &frame{path: child(), start: before, obj: tok == json.Delim('{'), isKey: true})
		case json.Delim('}'), json.Delim(']'):
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if f.start < offset && offset <= after {
				return f.path
			}
			done()
		default:
			if before < offset && offset <= after {
				return child()
			}
			done()
		}
	}
}
