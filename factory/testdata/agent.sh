#!/bin/sh
# Fake coding agent of the factory's tests, run by the command provider: the
# prompt arrives on stdin and directives in it say what to do. FAKE_DIR (from
# the profile's env) is where it reports its pid.
prompt=$(cat)
has() { case "$prompt" in *"$1"*) return 0 ;; esac; return 1; }

if has "#hang"; then
	echo $$ > "$FAKE_DIR/agent.pid"
	exec sleep 600
fi
if has "#stall-once" && [ ! -f "$FAKE_DIR/hung" ]; then
	touch "$FAKE_DIR/hung"
	echo $$ > "$FAKE_DIR/agent.pid"
	exec sleep 600
fi
if has "#ask" && ! has "Answer: "; then
	echo "Looking at the code first."
	echo "QUESTION: which greeting should it use?"
	exit 0
fi
if has "#fail-agent"; then
	echo "the agent broke" >&2
	exit 3
fi
if has "Verification failed"; then
	if has "#repair-fixes"; then
		echo fixed > fixed.txt
	fi
	echo "tried to repair"
	exit 0
fi
if has "#nochange"; then
	echo "nothing to do"
	exit 0
fi
if has "#big"; then
	yes "a generated line that makes the diff larger than one megabyte" | head -n 20000 > big.txt
fi
if has "#go-feature"; then
	cat > feature.go <<'GO'
package calc

// Double returns twice n.
func Double(n int) int { return Add(n, n) }
GO
	cat > feature_test.go <<'GO'
package calc

import "testing"

func TestDouble(t *testing.T) {
	if Double(4) != 8 {
		t.Fatal("Double(4) != 8")
	}
}
GO
fi
echo "feature" >> feature.txt
echo "implemented"
