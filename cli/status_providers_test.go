package cli

import "testing"

// TestProviderNote: `bridge status` says when a profile is the echo demo,
// what each agent may do unasked, and why one cannot run.
func TestProviderNote(t *testing.T) {
	for _, tc := range []struct {
		demo, available bool
		perms, err      string
		want            string
	}{
		{true, true, "", "", " (demo: echoes prompts; install Claude Code or Codex for real work)"},
		{false, true, "acceptEdits", "", " (permissions: acceptEdits)"},
		{false, true, "workspace-write", "", " (permissions: workspace-write)"},
		{false, true, "", "", ""},
		{false, false, "acceptEdits", `claude: executable "claude" not found`, ` (permissions: acceptEdits) (unavailable: claude: executable "claude" not found)`},
	} {
		if got := providerNote(tc.demo, tc.available, tc.perms, tc.err); got != tc.want {
			t.Errorf("providerNote(%v, %v, %q, %q) = %q, want %q", tc.demo, tc.available, tc.perms, tc.err, got, tc.want)
		}
	}
}
