package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// ChatRequest is the part of OpenAI's Chat Completions request the bridge
// uses. Other properties official clients send (temperature, max_tokens,
// user, ...) are accepted and ignored: the agent CLI decides those.
type ChatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N *int `json:"n"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns a message's content: a string, or the text of its text parts.
func (m chatMessage) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", errors.New("content must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content parts of type %q are not supported; send text", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// chatError is a refusal of the Chat Completions surface: its code is one
// of chatCodes or of the bridge's (codeStatus); param names the request
// field at fault.
type chatError struct {
	Code  string
	Param string
	Msg   string
}

func (e *chatError) Error() string { return e.Msg }

func invalid(param, code, format string, args ...any) *chatError {
	return &chatError{Param: param, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// modelProfile maps a model id to a profile: bridge/default, bridge/<profile>.
func (s *Service) modelProfile(model string) (string, bool) {
	name, ok := strings.CutPrefix(model, "bridge/")
	if !ok {
		return "", false
	}
	_, known := s.profiles[name]
	return name, known
}

// renderPrompt turns a chat transcript into one prompt for the agent.
func renderPrompt(msgs []chatMessage) (string, error) {
	if len(msgs) == 0 {
		return "", invalid("messages", "invalid_value", "messages must hold at least one message")
	}
	type turn struct{ role, text string }
	var system []string
	var turns []turn
	for i, m := range msgs {
		t, err := m.text()
		if err != nil {
			return "", invalid(fmt.Sprintf("messages[%d].content", i), "invalid_value", "%v", err)
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, t)
		case "user", "assistant", "tool":
			turns = append(turns, turn{m.Role, t})
		default:
			return "", invalid(fmt.Sprintf("messages[%d].role", i), "invalid_value", "role %q is not one of system, developer, user, assistant, tool", m.Role)
		}
	}
	if len(system) == 0 && len(turns) == 1 && turns[0].role == "user" {
		return turns[0].text, nil
	}
	var b strings.Builder
	if len(system) > 0 {
		b.WriteString("Instructions:\n" + strings.Join(system, "\n\n") + "\n\n")
	}
	if len(turns) > 0 {
		b.WriteString("Conversation so far:\n")
		for _, t := range turns {
			fmt.Fprintf(&b, "\n[%s]\n%s\n", t.role, t.text)
		}
		b.WriteString("\nReply to the last message as the assistant.")
	}
	return b.String(), nil
}

// chatOutcome maps a finished job to an OpenAI error, or nil on success.
func chatOutcome(j Job) error {
	switch j.State {
	case StateSucceeded:
		return nil
	case StateCancelled:
		return &chatError{Code: "job_cancelled", Msg: "the job behind this completion was cancelled"}
	case StatePaused:
		return &chatError{Code: "job_paused", Msg: "the job behind this completion was paused"}
	}
	msg, code := "the agent failed", "agent_error"
	if j.LastError != nil {
		msg, code = j.LastError.Message, j.LastError.Code
	}
	return &chatError{Code: code, Msg: msg}
}

func chatUsage(j Job) map[string]int64 {
	in, out := j.Usage.InputTokens+j.Usage.CacheReadTokens+j.Usage.CacheWriteTokens, j.Usage.OutputTokens
	return map[string]int64{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
}

// waitChat blocks until the job ends (or the waiter goes away).
func (s *Service) waitChat(ctx context.Context, jw *jobWait) (Job, error) {
	for {
		_, done, final, changed := jw.since(0)
		if done {
			// final was read in the transaction that ended the turn (or
			// paused or cancelled it): complete, no need to read it again.
			return final, nil
		}
		select {
		case <-ctx.Done():
			return Job{}, waitEnded(ctx)
		case <-s.stopped:
			return Job{}, &chatError{Code: "shutting_down", Msg: "the daemon is shutting down"}
		case <-changed:
		}
	}
}

// codeTokenRevoked is error.code of a completion cut by its client's revocation.
const codeTokenRevoked = "token_revoked"

// errTokenRevoked is the cause that ends a completion's wait when its
// client is revoked.
var errTokenRevoked = errors.New("token revoked")

// waitEnded is the answer of a completion whose wait ctx ended: 401
// token_revoked when the client was revoked (docs/bridge-api.md, Chat
// Completions); otherwise the client went away and no one reads the
// answer, which says so all the same.
func waitEnded(ctx context.Context) *chatError {
	if errors.Is(context.Cause(ctx), errTokenRevoked) {
		return &chatError{Code: codeTokenRevoked,
			Msg: "the token's client was revoked while the completion ran; its job was cancelled unless another request waits for it"}
	}
	return &chatError{Code: "request_cancelled", Msg: "the request was cancelled"}
}

// model is the OpenAI Model object of a profile.
func (s *Service) model(name string) map[string]any {
	prof := s.profiles[name]
	return map[string]any{
		"id": "bridge/" + name, "object": "model", "created": int64(0), "owned_by": "agent-bridge",
		"provider": prof.provider.Name(), "demo": prof.provider.Demo(), "available": prof.provider.Available() == nil,
	}
}

// ChatRun is a completion's job while a request waits for it.
type ChatRun struct {
	Job   Job
	Model string
	// Stream and IncludeUsage are the request's stream options.
	Stream, IncludeUsage bool

	s     *Service
	ctx   context.Context
	wait  *jobWait
	close func()
}

// StartChat validates a Chat Completions request and starts its job (now
// when a slot is free, else queued). The run's context ends with ctx or
// when p's client is revoked; Close must be called when the request ends:
// the job is cancelled when no other request waits for it.
func (s *Service) StartChat(ctx context.Context, p Principal, req ChatRequest) (*ChatRun, error) {
	if req.Model == "" {
		return nil, invalid("model", "missing_required_parameter", "model is required (bridge/default or bridge/<profile>)")
	}
	profile, ok := s.modelProfile(req.Model)
	if !ok {
		return nil, &chatError{Param: "model", Code: "model_not_found", Msg: fmt.Sprintf("the model %q does not exist; see GET /v1/models", req.Model)}
	}
	if !p.MayUse(profile) {
		return nil, &chatError{Param: "model", Code: CodeProfileNotAllowed, Msg: fmt.Sprintf("this token may not use %s", req.Model)}
	}
	if req.N != nil && *req.N != 1 {
		return nil, invalid("n", "invalid_value", "n must be 1")
	}
	prompt, err := renderPrompt(req.Messages)
	if err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(prompt); n < 1 || n > maxTextChars {
		return nil, invalid("messages", "context_length_exceeded", "the conversation must render to 1 to %d characters", maxTextChars)
	}
	if strings.TrimSpace(prompt) == "" {
		return nil, invalid("messages", "invalid_value", "the conversation holds only whitespace")
	}

	id := uuid.NewString()
	// Join before the job exists, so no output can slip past the waiter.
	jw, leave := s.waiters.join(id)
	runCtx, cancel := context.WithCancelCause(ctx)
	unregister := s.live.add(p, func() { cancel(errTokenRevoked) })
	run := &ChatRun{Model: req.Model, Stream: req.Stream, IncludeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
		s: s, ctx: runCtx, wait: jw}
	run.close = func() {
		// A waiter that goes away (disconnect, revocation) cancels the job
		// when no other waiter remains. One that saw the job end has
		// nothing to cancel: the answer is not held up by reading it again.
		if leave() && !run.ended() {
			if j, err := s.Job(context.Background(), Principal{Owner: true}, id); err == nil && !j.State.Terminal() {
				if _, err := s.Control(context.Background(), Principal{Owner: true}, id, ActCancel); err != nil {
					s.log.Warn("cancel abandoned chat job", "job", id, "err", err)
				}
			}
		}
		unregister()
		cancel(nil)
	}
	nj := newJob{ID: id, Profile: profile, Prompt: prompt, Source: "chat", Metadata: map[string]string{"model": req.Model}}
	// The agent starts before the creation commits (startNow): a client
	// that goes away meanwhile must not drop the creation of a job whose
	// agent may already act; its Close cancels the job instead.
	row := s.jobRow(p, nj, s.now().UTC())
	committed := s.createJobQueued(context.WithoutCancel(ctx), row)
	started, err := s.sched.startNow(s.ctx, id, committed, firstTurn(row))
	if err != nil {
		run.close()
		return nil, err
	}
	if !started {
		s.sched.kick() // no free slot: the job waits its turn
	}
	run.Job = row
	return run, nil
}

// Close ends the request's wait (see StartChat).
func (c *ChatRun) Close() { c.close() }

// ended reports whether the wait saw the job reach a terminal state.
func (c *ChatRun) ended() bool { return c.wait.ended() }

// Wait blocks until the job ends and answers it, or the OpenAI error of
// a job that did not succeed or a wait that ended first.
func (c *ChatRun) Wait() (Job, error) {
	final, err := c.s.waitChat(c.ctx, c.wait)
	if err != nil {
		return Job{}, err
	}
	return final, chatOutcome(final)
}

// Models lists the OpenAI Model objects of the profiles p may use.
func (s *Service) Models(p Principal) []map[string]any {
	data := []map[string]any{}
	for _, name := range s.profileNames() {
		if p.MayUse(name) {
			data = append(data, s.model(name))
		}
	}
	return data
}

// Model is OpenAI's models.retrieve: a model the token may not use is as
// unknown as one that does not exist, like in the list.
func (s *Service) Model(p Principal, id string) (map[string]any, error) {
	name, ok := s.modelProfile(id)
	if !ok || !p.MayUse(name) {
		return nil, &chatError{Param: "model", Code: "model_not_found",
			Msg: fmt.Sprintf("the model %q does not exist; see GET /v1/models", id)}
	}
	return s.model(name), nil
}
