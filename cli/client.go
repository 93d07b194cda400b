package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/agentbridge/bridge/client"
	"github.com/agentbridge/bridge/daemon"
)

// daemonConn is the running daemon of a data directory: its addresses
// and the owner token.
type daemonConn struct {
	state daemon.State
	token string
	http  *http.Client
}

// daemonClient finds the running daemon through daemon.json and reads the
// owner token. It fails with ExitNotRunning when no daemon answers.
func (a *app) daemonClient(ctx context.Context) (*daemonConn, error) {
	dir, err := a.dir()
	if err != nil {
		return nil, err
	}
	st, err := daemon.ReadState(dir)
	if errors.Is(err, daemon.ErrNotRunning) {
		return nil, withCode(ExitNotRunning, fmt.Errorf("the daemon is not running for %s; start it with: bridge serve --data-dir %s", dir, dir))
	}
	if err != nil {
		return nil, err
	}
	var answered *client.Error
	if err := probeHealth(ctx, st.ServicesURL); err != nil && !errors.As(err, &answered) {
		return nil, withCode(ExitNotRunning, fmt.Errorf("the daemon is not answering at %s (stale daemon.json from pid %d?)", st.ServicesURL, st.PID))
	}
	tok, err := daemon.ReadOwnerToken(filepath.Join(dir, daemon.OwnerTokenFile))
	if err != nil {
		return nil, err
	}
	return &daemonConn{state: st, token: tok, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// apiError is an error answer of the daemon, in any of its surfaces' shapes.
type apiError = client.Error

// api is a client of the listener at base with the owner token.
func (c *daemonConn) api(base string) *client.Client { return client.New(base, c.token, c.http) }

// do sends a JSON request to base+path and decodes a JSON answer into out.
// base is the daemon's bridge or services URL.
func (c *daemonConn) do(ctx context.Context, method, base, path string, body, out any) error {
	_, err := c.api(base).Do(ctx, method, path, nil, body, out)
	return err
}
