package sim

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// secretAt reports the first value of raw at one of pointers (JSON
// Pointers with "*" for any member or element, "" for the whole value) and
// its location. Secret values never enter a session: sessions are stored
// and shown unredacted (docs/platform-api.md, "Debug sessions").
func secretAt(raw json.RawMessage, pointers []string) (string, bool) {
	if len(pointers) == 0 || len(bytes.TrimSpace(raw)) == 0 {
		return "", false
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false
	}
	for _, p := range pointers {
		var segs []string
		if p != "" && p != "/" {
			segs = strings.Split(strings.TrimPrefix(p, "/"), "/")
		}
		if loc, ok := walkSecret(v, segs, ""); ok {
			return loc, true
		}
	}
	return "", false
}

func walkSecret(v any, segs []string, at string) (string, bool) {
	if v == nil {
		return "", false
	}
	if len(segs) == 0 {
		return at, true
	}
	seg := strings.NewReplacer("~1", "/", "~0", "~").Replace(segs[0])
	switch x := v.(type) {
	case map[string]any:
		if seg == "*" {
			for k, m := range x {
				if loc, ok := walkSecret(m, segs[1:], at+"/"+escape(k)); ok {
					return loc, true
				}
			}
			return "", false
		}
		if m, ok := x[seg]; ok {
			return walkSecret(m, segs[1:], at+"/"+escape(seg))
		}
	case []any:
		for i, e := range x {
			if seg == "*" || seg == strconv.Itoa(i) {
				if loc, ok := walkSecret(e, segs[1:], at+"/"+strconv.Itoa(i)); ok {
					return loc, true
				}
			}
		}
	}
	return "", false
}

func escape(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }
