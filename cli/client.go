package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbridge/bridge/daemon"
)

// client talks to the running daemon of a data directory with its owner token.
type client struct {
	state daemon.State
	token string
	http  *http.Client
}

// daemonClient finds the running daemon through daemon.json and reads the
// owner token. It fails with ExitNotRunning when no daemon answers.
func (a *app) daemonClient(ctx context.Context) (*client, error) {
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
	if err := probeHealth(ctx, st.ServicesURL); err != nil {
		return nil, withCode(ExitNotRunning, fmt.Errorf("the daemon is not answering at %s (stale daemon.json from pid %d?)", st.ServicesURL, st.PID))
	}
	tok, err := daemon.ReadOwnerToken(filepath.Join(dir, daemon.OwnerTokenFile))
	if err != nil {
		return nil, err
	}
	return &client{state: st, token: tok, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// apiError is an error answer of the daemon, in any of its surfaces' shapes.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s (%s, HTTP %d)", e.Message, e.Code, e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// do sends a JSON request to base+path and decodes a JSON answer into out.
// base is the daemon's bridge or services URL.
func (c *client) do(ctx context.Context, method, base, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return decodeAPIError(resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// decodeAPIError reads the bridge's {"error":{...}} or a problem+json body.
func decodeAPIError(status int, data []byte) error {
	var shapes struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Code    string `json:"code"`
		Message string `json:"message"`
		Title   string `json:"title"`
		Detail  string `json:"detail"`
	}
	_ = json.Unmarshal(data, &shapes)
	e := &apiError{Status: status}
	switch {
	case shapes.Error != nil:
		e.Code, e.Message = shapes.Error.Code, shapes.Error.Message
	case shapes.Code != "" || shapes.Message != "":
		e.Code, e.Message = shapes.Code, shapes.Message
	case shapes.Detail != "" || shapes.Title != "":
		e.Message = strings.TrimSpace(shapes.Title + ": " + shapes.Detail)
	default:
		e.Message = strings.TrimSpace(string(data))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200]
		}
	}
	return e
}
