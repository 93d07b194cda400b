package broker

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestValidateTopic(t *testing.T) {
	tests := []struct {
		topic string
		ok    bool
	}{
		{"orders", true},
		{"webhooks.github-push_v2", true},
		{"A.b_C-9", true},
		{strings.Repeat("a", 249), true},
		{strings.Repeat("a", 250), false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"a b", false},
		{"a/b", false},
		{"a*", false},
		{"ü", false},
	}
	for _, tt := range tests {
		err := ValidateTopic(tt.topic)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidTopic)) {
			t.Errorf("ValidateTopic(%q) = %v, want ok=%v", tt.topic, err, tt.ok)
		}
	}
}

func TestValidateGroup(t *testing.T) {
	tests := []struct {
		group string
		ok    bool
	}{
		{"callbacks", true},
		{"any chars / ü", true},
		{strings.Repeat("g", 255), true},
		{strings.Repeat("g", 256), false},
		{"", false},
		{"nul\x00", false},
		{"\xff", false},
	}
	for _, tt := range tests {
		err := ValidateGroup(tt.group)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidGroup)) {
			t.Errorf("ValidateGroup(%q) = %v, want ok=%v", tt.group, err, tt.ok)
		}
	}
}

func TestPatterns(t *testing.T) {
	topics := []string{"orders", "orders.eu", "orders.us", "ordersx", "other", "o"}
	tests := []struct {
		pattern string
		valid   bool
		matches []string
	}{
		{"*", true, topics},
		{"orders", true, []string{"orders"}},
		{"orders*", true, []string{"orders", "orders.eu", "orders.us", "ordersx"}},
		{"orders.*", true, []string{"orders.eu", "orders.us"}},
		{"o*", true, topics},
		{"", false, nil},
		{"**", false, nil},
		{"a*b", false, nil},
		{"*a", false, nil},
		{"bad topic*", false, nil},
		{"bad topic", false, nil},
		{strings.Repeat("a", 250) + "*", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			is := is.New(t)
			p, err := parsePattern(tt.pattern)
			if !tt.valid {
				is.True(errors.Is(err, ErrInvalidPattern))
				return
			}
			is.NoErr(err)
			re := regexp.MustCompile(p.regex())
			var got []string
			for _, topic := range topics {
				is.Equal(re.MatchString(topic), p.match(topic)) // Kafka's regex agrees
				if p.match(topic) {
					got = append(got, topic)
				}
			}
			is.Equal(got, tt.matches)
		})
	}
}

func TestParsePatterns(t *testing.T) {
	is := is.New(t)
	_, err := parsePatterns(nil)
	is.True(errors.Is(err, ErrInvalidPattern))
	ps, err := parsePatterns([]string{"a", "b.*"})
	is.NoErr(err)
	is.True(ps.match("a"))
	is.True(ps.match("b.c"))
	is.True(!ps.match("b"))
	is.Equal(ps.regexes(), []string{`^a$`, `^b\..*$`})
}
