package sim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentbridge/bridge/platform/api"
)

// The live channel of an editor host session (docs/platform-api.md,
// "Editor host live channel"): a WebSocket on which an IDE panel sends
// debug commands and receives every new view as it happens, whoever ran
// the command (the panel, the HTTP route or another panel).
//
// The upgrade request passes the services listener's Host/Origin guard
// (httpx.Guard, applied to every request before routing) and the same
// bearer check as the HTTP routes, so the upgrader's own origin check is
// not repeated here.
var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// LiveIn is a message from the panel.
type LiveIn struct {
	Type     string          `json:"type"` // "command"
	Revision int64           `json:"revision"`
	Command  json.RawMessage `json:"command"`
}

// LiveOut is a message to the panel: type "view" (session), "running"
// (revision: a command started working), or "error" (problem).
type LiveOut struct {
	Type     string          `json:"type"`
	Revision int64           `json:"revision,omitempty"`
	Session  json.RawMessage `json:"session,omitempty"`
	Problem  *LiveProblem    `json:"problem,omitempty"`
}

// LiveProblem is a refused command, in the problem shape's terms.
type LiveProblem struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// liveWriteWait bounds one write to a panel.
const liveWriteWait = 10 * time.Second

func (s *Service) studioLiveRoute(c *api.Call) error {
	owner, err := authorizeSimulate(c)
	if err != nil {
		return err
	}
	id := c.Params.ByName("identifier")
	first, err := s.studio.get(owner, id)
	if err != nil {
		return studioProblem(err)
	}
	if !websocket.IsWebSocketUpgrade(c.R) {
		return studioProblem(refuse(CodeStudioReq, "", "this route is a WebSocket: send an upgrade request"))
	}
	views, unsubscribe, err := s.studio.subscribe(owner, id)
	if err != nil {
		return studioProblem(err)
	}
	conn, err := upgrader.Upgrade(c.W, c.R, nil)
	if err != nil {
		unsubscribe()
		return nil // the upgrader answered the client
	}
	conn.SetReadLimit(maxCommandBody)
	var wmu sync.Mutex
	send := func(m LiveOut) error {
		wmu.Lock()
		defer wmu.Unlock()
		_ = conn.SetWriteDeadline(time.Now().Add(liveWriteWait))
		return conn.WriteJSON(m)
	}
	sendView := func(sess *Session) error {
		body, err := studioBody(sess)
		if err != nil {
			return err
		}
		return send(LiveOut{Type: "view", Revision: sess.Revision, Session: body})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var in LiveIn
			if err := conn.ReadJSON(&in); err != nil {
				return
			}
			if in.Type != "command" {
				_ = send(LiveOut{Type: "error", Problem: liveProblem(refuse(CodeStudioReq, "", `a message is {"type": "command", "revision", "command"}`))})
				continue
			}
			cmd, err := DecodeStudioCommand(in.Command)
			if err == nil {
				_, err = s.studio.command(context.Background(), owner, id, in.Revision, cmd, func() {
					_ = send(LiveOut{Type: "running", Revision: in.Revision})
				})
			}
			if err != nil {
				_ = send(LiveOut{Type: "error", Revision: in.Revision, Problem: liveProblem(err)})
			}
		}
	}()
	defer func() {
		unsubscribe()
		_ = conn.Close()
		<-done
	}()
	if err := sendView(first); err != nil {
		return nil
	}
	for {
		select {
		case body, ok := <-views:
			if !ok {
				_ = send(LiveOut{Type: "error", Problem: liveProblem(api.Closed("the session was closed"))})
				return nil
			}
			raw, err := json.Marshal(body)
			if err == nil {
				raw, err = CamelKeys(raw)
			}
			if err != nil || send(LiveOut{Type: "view", Revision: body.Revision, Session: raw}) != nil {
				return nil
			}
		case <-done:
			return nil
		}
	}
}

func liveProblem(err error) *LiveProblem {
	var ae *api.Error
	if errors.As(studioProblem(err), &ae) {
		return &LiveProblem{Status: ae.Status(), Code: ae.Code, Message: ae.Message}
	}
	return &LiveProblem{Status: api.CodeStatus(api.CodeInternal), Code: api.CodeInternal, Message: "internal error"}
}
