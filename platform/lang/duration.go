package lang

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MaxDurationMs is the longest duration the language accepts: ten years of
// 365 days. It keeps every deadline representable and every timer sane.
const MaxDurationMs = int64(3650) * 24 * 3600 * 1000

var (
	goDurationRE  = regexp.MustCompile(`^(?:[0-9]+(?:ms|s|m|h|d))+$`)
	goDurationTok = regexp.MustCompile(`([0-9]+)(ms|s|m|h|d)`)
	isoDurationRE = regexp.MustCompile(`^P(?:([0-9]+)W)?(?:([0-9]+)D)?(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+)(?:\.([0-9]{1,3}))?S)?)?$`)
)

// ParseDuration parses a duration literal of the language into milliseconds.
// Two spellings are accepted: unit-suffixed ("90s", "1h30m", "2d", "250ms";
// d is 24 hours) and ISO-8601 without years or months ("PT30S", "P1DT2H",
// "P2W"), whose lengths would depend on a calendar.
func ParseDuration(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if goDurationRE.MatchString(s) {
		var total int64
		seen := map[string]bool{}
		for _, m := range goDurationTok.FindAllStringSubmatch(s, -1) {
			if seen[m[2]] {
				return 0, fmt.Errorf("duration %q repeats the unit %q", s, m[2])
			}
			seen[m[2]] = true
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil || n > MaxDurationMs {
				return 0, fmt.Errorf("duration %q is too long", s)
			}
			mult := map[string]int64{"ms": 1, "s": 1000, "m": 60000, "h": 3600000, "d": 86400000}[m[2]]
			if n > (MaxDurationMs-total)/mult {
				return 0, fmt.Errorf("duration %q is longer than 3650 days", s)
			}
			total += n * mult
		}
		return total, nil
	}
	if m := isoDurationRE.FindStringSubmatch(s); m != nil && s != "P" && !strings.HasSuffix(s, "T") {
		var total int64
		mults := []int64{7 * 86400000, 86400000, 3600000, 60000, 1000}
		for i, mult := range mults {
			if m[i+1] == "" {
				continue
			}
			n, err := strconv.ParseInt(m[i+1], 10, 64)
			if err != nil || n > MaxDurationMs || n > (MaxDurationMs-total)/mult {
				return 0, fmt.Errorf("duration %q is longer than 3650 days", s)
			}
			total += n * mult
		}
		if frac := m[6]; frac != "" {
			ms, _ := strconv.ParseInt((frac + "00")[:3], 10, 64)
			total += ms
			if total > MaxDurationMs {
				return 0, fmt.Errorf("duration %q is longer than 3650 days", s)
			}
		}
		return total, nil
	}
	return 0, fmt.Errorf("invalid duration %q: use a number with a unit (250ms, 30s, 5m, 2h, 1d, combined as 1h30m) or ISO-8601 (PT30S, P1DT2H)", s)
}
