package api

import (
	"strconv"
	"strings"
)

// maxRevisionDigits bounds a revision to what int64 holds comfortably.
const maxRevisionDigits = 18

// FormatETag renders a revision as the quoted ETag "2".
func FormatETag(rev int64) string { return `"` + strconv.FormatInt(rev, 10) + `"` }

// ParseIfMatch parses the If-Match header values of a request into a
// positive revision. Exactly one value is accepted, quoted ("2") or bare
// (2). Weak (W/"2"), wildcard (*), multiple ("1", "2" or repeated headers),
// zero, signed (+2, -2), zero-padded (02), empty, non-decimal and oversized
// values answer 422 PF-ETAG, each with its own diagnostic.
func ParseIfMatch(values []string) (int64, error) {
	if len(values) != 1 {
		return 0, etagError("multiple", "send exactly one If-Match header")
	}
	v := strings.Trim(values[0], " \t")
	switch {
	case v == "":
		return 0, etagError("empty", "If-Match is empty")
	case strings.Contains(v, ","):
		return 0, etagError("multiple", "If-Match must name exactly one revision")
	case v == "*":
		return 0, etagError("wildcard", "the wildcard * is not accepted; send the current revision")
	case strings.HasPrefix(v, "W/") || strings.HasPrefix(v, "w/"):
		return 0, etagError("weak", "weak validators are not accepted; send the revision as \"N\"")
	}
	if strings.HasPrefix(v, `"`) || strings.HasSuffix(v, `"`) {
		if len(v) < 2 || !strings.HasPrefix(v, `"`) || !strings.HasSuffix(v, `"`) {
			return 0, etagError("malformed", "If-Match has an unbalanced quote")
		}
		v = v[1 : len(v)-1]
	}
	if v == "" {
		return 0, etagError("empty", "If-Match names no revision")
	}
	if v[0] == '+' || v[0] == '-' {
		return 0, etagError("signed", "a revision has no sign")
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, etagError("malformed", "a revision is a positive decimal integer")
		}
	}
	if v[0] == '0' {
		if len(v) == 1 {
			return 0, etagError("zero", "revisions start at 1")
		}
		return 0, etagError("zero_padded", "a revision has no leading zeros")
	}
	if len(v) > maxRevisionDigits {
		return 0, etagError("too_large", "the revision is out of range")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, etagError("too_large", "the revision is out of range")
	}
	return n, nil
}

func etagError(kind, msg string) *Error {
	return &Error{Code: CodeETag, Message: "If-Match must be one positive revision, quoted or bare: " + msg,
		Diagnostics: []Diagnostic{{Code: kind, Parameter: "If-Match", Message: msg}}}
}

// CheckRevision compares the If-Match revision of a change with the
// resource's current one: 412 PF-ETAG when they differ. want 0 (no
// If-Match on an optional route) always passes.
func CheckRevision(want, current int64) error {
	if want == 0 || want == current {
		return nil
	}
	return &Error{Code: CodeETag, row: rowStaleETag,
		Message: "the resource changed since it was read; read it again and retry with its current revision",
		Headers: map[string]string{"ETag": FormatETag(current)}}
}
