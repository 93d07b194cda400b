package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/daemon"
)

func TestTokenAndRevokeWithDaemonDown(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	ctx := context.Background()
	code, out, errw := run(ctx, "token", "--data-dir", dir, "--id", "ide", "--scopes", "read,submit", "--profiles", "default")
	is.Equal(code, 0)
	tok := strings.TrimSpace(out)
	is.True(strings.HasPrefix(tok, daemon.TokenPrefix))
	is.True(strings.Contains(errw, "shown only once"))

	code, out, _ = run(ctx, "token", "--data-dir", dir, "--id", "ide", "--json")
	is.Equal(code, 0)
	var issued map[string]any
	is.NoErr(json.Unmarshal([]byte(out), &issued))
	is.True(strings.HasPrefix(issued["token"].(string), daemon.TokenPrefix))

	// A bad --scopes value is a usage error (exit 2), whatever is wrong with it.
	for _, scopes := range []string{"admin", "read,read", ",", "read,Submit"} {
		code, _, errw = run(ctx, "token", "--data-dir", dir, "--id", "ide", "--scopes", scopes)
		is.Equal(code, ExitUsage)
		is.True(strings.Contains(errw, "--scopes"))
	}
	code, _, errw = run(ctx, "token", "--data-dir", dir, "--id", "ide", "--profiles", "gpt")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "not configured"))
	code, _, _ = run(ctx, "token", "--data-dir", dir)
	is.Equal(code, ExitUsage) // --id is required

	code, out, _ = run(ctx, "revoke", "--data-dir", dir, "--id", "ide", "--json")
	is.Equal(code, 0)
	is.True(strings.Contains(out, `"revokedTokens": 2`))
	code, _, errw = run(ctx, "revoke", "--data-dir", dir, "--id", "nobody")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "no client"))

	// A token made while the daemon was down works once it runs; the revoked one does not.
	code, out, _ = run(ctx, "token", "--data-dir", dir, "--id", "panel", "--scopes", "read")
	is.Equal(code, 0)
	fresh := strings.TrimSpace(out)
	st, stop := serveInProcess(t, dir)
	defer stop()
	is.Equal(statusCode(t, st.BridgeURL, fresh), 200)
	is.Equal(statusCode(t, st.BridgeURL, tok), 401)
}

func TestTokenAndRevokeWithDaemonUp(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	ctx := context.Background()
	st, stop := serveInProcess(t, dir)
	defer stop()
	code, out, _ := run(ctx, "token", "--data-dir", dir, "--id", "ide", "--scopes", "read")
	is.Equal(code, 0)
	tok := strings.TrimSpace(out)
	is.Equal(statusCode(t, st.BridgeURL, tok), 200)
	code, out, _ = run(ctx, "revoke", "--data-dir", dir, "--id", "ide")
	is.Equal(code, 0)
	is.True(strings.Contains(out, "Revoked 1 token"))
	is.Equal(statusCode(t, st.BridgeURL, tok), 401) // the next request
	code, _, errw := run(ctx, "token", "--data-dir", dir, "--id", "x", "--scopes", "nope")
	is.Equal(code, ExitUsage)
	is.True(strings.Contains(errw, "unknown scope"))
}

func serveInProcess(t *testing.T, dir string) (daemon.State, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code, _, _ := run(ctx, "serve", "--data-dir", dir, "--port", "0", "--services-port", "0", "--log-level", "error")
		done <- code
	}()
	deadline := time.Now().Add(30 * time.Second) // a -race daemon's start on a loaded machine
	for time.Now().Before(deadline) {
		if st, err := daemon.ReadState(dir); err == nil {
			return st, func() {
				cancel()
				if code := <-done; code != 0 {
					t.Errorf("serve exited %d", code)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	t.Fatal("daemon did not start")
	return daemon.State{}, nil
}

func statusCode(t *testing.T, base, tok string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/bridge/status", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
