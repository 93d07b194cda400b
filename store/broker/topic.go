package broker

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

const (
	// maxTopicLen is Kafka's limit; the bolt broker applies it too so a
	// deployment can switch implementations without renaming topics.
	maxTopicLen = 249
	maxGroupLen = 255
)

// ValidateTopic reports whether topic is usable on every implementation:
// 1 to 249 characters from [a-zA-Z0-9._-], and not "." or "..".
func ValidateTopic(topic string) error {
	if topic == "" || len(topic) > maxTopicLen || topic == "." || topic == ".." {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, topic)
	}
	if !legalTopicChars(topic) {
		return fmt.Errorf("%w: %q: allowed characters are a-z A-Z 0-9 . _ -", ErrInvalidTopic, topic)
	}
	return nil
}

func legalTopicChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidateGroup reports whether group is a usable consumer group name.
func ValidateGroup(group string) error {
	if group == "" || len(group) > maxGroupLen || !utf8.ValidString(group) || strings.ContainsRune(group, 0) {
		return fmt.Errorf("%w: %q", ErrInvalidGroup, group)
	}
	return nil
}

// pattern is one parsed subscription pattern: an exact topic, or a prefix
// when wildcard is set ("*" alone is the empty prefix).
type pattern struct {
	prefix   string
	wildcard bool
}

func (p pattern) match(topic string) bool {
	if p.wildcard {
		return strings.HasPrefix(topic, p.prefix)
	}
	return topic == p.prefix
}

// regex returns an anchored regular expression equivalent to p, for Kafka's
// regex topic consumption.
func (p pattern) regex() string {
	if p.wildcard {
		return "^" + regexp.QuoteMeta(p.prefix) + ".*$"
	}
	return "^" + regexp.QuoteMeta(p.prefix) + "$"
}

// patterns is a validated, non-empty set of subscription patterns.
type patterns []pattern

// parsePatterns validates raw subscription patterns.
func parsePatterns(raw []string) (patterns, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: no patterns", ErrInvalidPattern)
	}
	ps := make(patterns, 0, len(raw))
	for _, r := range raw {
		p, err := parsePattern(r)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func parsePattern(raw string) (pattern, error) {
	prefix, wildcard := strings.CutSuffix(raw, "*")
	if strings.Contains(prefix, "*") {
		return pattern{}, fmt.Errorf("%w: %q: '*' is only allowed at the end", ErrInvalidPattern, raw)
	}
	if !wildcard {
		if err := ValidateTopic(raw); err != nil {
			return pattern{}, fmt.Errorf("%w: %q: not a valid topic", ErrInvalidPattern, raw)
		}
		return pattern{prefix: raw}, nil
	}
	// A prefix is checked for characters only: "a." is a fine prefix but not a topic.
	if len(prefix) > maxTopicLen || !legalTopicChars(prefix) {
		return pattern{}, fmt.Errorf("%w: %q", ErrInvalidPattern, raw)
	}
	return pattern{prefix: prefix, wildcard: true}, nil
}

func (ps patterns) match(topic string) bool {
	for _, p := range ps {
		if p.match(topic) {
			return true
		}
	}
	return false
}

func (ps patterns) regexes() []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.regex()
	}
	return out
}
