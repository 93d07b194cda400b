package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
)

// chatRequest is the part of OpenAI's Chat Completions request the bridge
// uses. Other properties official clients send (temperature, max_tokens,
// user, ...) are accepted and ignored: the agent CLI decides those.
type chatRequest struct {
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

// chatError is an error in OpenAI's shape.
type chatError struct {
	status int
	Type   string
	Code   string
	Param  string
	Msg    string
}

func (e *chatError) Error() string { return e.Msg }

func invalid(param, code, format string, args ...any) *chatError {
	return &chatError{status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// writeOpenAIError writes {"error":{"message","type","param","code"}} and
// returns the status it answered.
func writeOpenAIError(w http.ResponseWriter, err error) int {
	var ce *chatError
	var e *Error
	var be *httpx.BodyError
	switch {
	case errors.As(err, &ce):
	case errors.As(err, &e):
		status := codeStatus[e.Code]
		if status == 0 {
			status = http.StatusInternalServerError
		}
		typ := "invalid_request_error"
		code := e.Code
		switch {
		case status == http.StatusUnauthorized:
			typ, code = "authentication_error", "invalid_api_key"
		case status == http.StatusForbidden:
			typ = "permission_error"
		case status >= 500:
			typ = "server_error"
		}
		ce = &chatError{status: status, Type: typ, Code: code, Msg: e.Message}
	case errors.As(err, &be):
		ce = &chatError{status: be.Status, Type: "invalid_request_error", Code: "invalid_body", Param: be.Field, Msg: be.Msg}
		if be.Status != http.StatusRequestEntityTooLarge && be.Status != http.StatusUnsupportedMediaType {
			ce.status = http.StatusBadRequest
		}
	default:
		ce = &chatError{status: http.StatusInternalServerError, Type: "server_error", Code: "internal", Msg: "internal error"}
	}
	if ce.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="bridge"`)
	}
	var param, code any
	if ce.Param != "" {
		param = ce.Param
	}
	if ce.Code != "" {
		code = ce.Code
	}
	httpx.WriteJSON(w, ce.status, map[string]any{"error": map[string]any{"message": ce.Msg, "type": ce.Type, "param": param, "code": code}})
	return ce.status
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

func (s *Service) handleChat(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	var req chatRequest
	if err := httpx.DecodeBytes(data, &req, httpx.DecodeOptions{AllowUnknown: true}); err != nil {
		return err
	}
	if req.Model == "" {
		return invalid("model", "missing_required_parameter", "model is required (bridge/default or bridge/<profile>)")
	}
	profile, ok := s.modelProfile(req.Model)
	if !ok {
		return &chatError{status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found", Msg: fmt.Sprintf("the model %q does not exist; see GET /v1/models", req.Model)}
	}
	if !p.MayUse(profile) {
		return &chatError{status: http.StatusForbidden, Type: "permission_error", Param: "model", Code: CodeProfileNotAllowed, Msg: fmt.Sprintf("this token may not use %s", req.Model)}
	}
	if req.N != nil && *req.N != 1 {
		return invalid("n", "invalid_value", "n must be 1")
	}
	prompt, err := renderPrompt(req.Messages)
	if err != nil {
		return err
	}
	if n := utf8.RuneCountInString(prompt); n < 1 || n > maxTextChars {
		return invalid("messages", "context_length_exceeded", "the conversation must render to 1 to %d characters", maxTextChars)
	}
	if strings.TrimSpace(prompt) == "" {
		return invalid("messages", "invalid_value", "the conversation holds only whitespace")
	}

	id := uuid.NewString()
	// Join before the job exists, so no output can slip past the waiter.
	jw, leave := s.waiters.join(id)
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	unregister := s.live.add(p, func() { cancel(errTokenRevoked) })
	defer unregister()
	defer func() {
		// A waiter that goes away (disconnect, revocation) cancels the job
		// when no other waiter remains.
		if leave() {
			if j, err := s.getJob(context.Background(), s.db.Reader(), Principal{Owner: true}, id); err == nil && !j.State.Terminal() {
				if _, err := s.applyControl(context.Background(), Principal{Owner: true}, id, ActCancel); err != nil {
					s.log.Warn("cancel abandoned chat job", "job", id, "err", err)
				}
			}
		}
	}()
	nj := newJob{ID: id, Profile: profile, Prompt: prompt, Source: "chat", Metadata: map[string]string{"model": req.Model}}
	jobp, committed := s.createJobQueued(r.Context(), p, nj)
	started, err := s.sched.startNow(s.ctx, id, committed)
	if err != nil {
		return err
	}
	if !started {
		s.sched.kick() // no free slot: the job waits its turn
	}
	job := *jobp
	created := job.CreatedAt.Unix()
	completionID := "chatcmpl-" + job.ID
	w.Header().Set("X-Bridge-Job-ID", job.ID)
	if req.Stream {
		includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		return s.streamChat(ctx, w, jw, completionID, req.Model, created, includeUsage)
	}
	final, err := s.waitChat(ctx, jw, job.ID)
	if err != nil {
		return err
	}
	if err := chatOutcome(final); err != nil {
		return err
	}
	return respond(w, http.StatusOK, map[string]any{
		"id": completionID, "object": "chat.completion", "created": created, "model": req.Model,
		"system_fingerprint": nil,
		"choices": []any{map[string]any{
			"index": 0, "logprobs": nil, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": final.resultText, "refusal": nil},
		}},
		"usage": chatUsage(final),
	})
}

// chatOutcome maps a finished job to an OpenAI error, or nil on success.
func chatOutcome(j Job) error {
	switch j.State {
	case StateSucceeded:
		return nil
	case StateCancelled:
		return &chatError{status: http.StatusConflict, Type: "invalid_request_error", Code: "job_cancelled", Msg: "the job behind this completion was cancelled"}
	case StatePaused:
		return &chatError{status: http.StatusConflict, Type: "invalid_request_error", Code: "job_paused", Msg: "the job behind this completion was paused"}
	}
	msg, code := "the agent failed", "agent_error"
	if j.LastError != nil {
		msg, code = j.LastError.Message, j.LastError.Code
	}
	return &chatError{status: http.StatusBadGateway, Type: "server_error", Code: code, Msg: msg}
}

func chatUsage(j Job) map[string]int64 {
	in, out := j.Usage.InputTokens+j.Usage.CacheReadTokens+j.Usage.CacheWriteTokens, j.Usage.OutputTokens
	return map[string]int64{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
}

// waitChat blocks until the job ends (or the waiter goes away).
func (s *Service) waitChat(ctx context.Context, jw *jobWait, id string) (Job, error) {
	for {
		_, done, final, changed := jw.since(0)
		if done {
			return s.refresh(final), nil
		}
		select {
		case <-ctx.Done():
			return Job{}, waitEnded(ctx)
		case <-s.stopped:
			return Job{}, &chatError{status: http.StatusServiceUnavailable, Type: "server_error", Code: "shutting_down", Msg: "the daemon is shutting down"}
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
		return &chatError{status: http.StatusUnauthorized, Type: "authentication_error", Code: codeTokenRevoked,
			Msg: "the token's client was revoked while the completion ran; its job was cancelled unless another request waits for it"}
	}
	return &chatError{status: http.StatusBadRequest, Type: "invalid_request_error", Code: "request_cancelled", Msg: "the request was cancelled"}
}

// refresh rereads a job so its usage and result are complete.
func (s *Service) refresh(j Job) Job {
	if fresh, err := s.getJob(context.Background(), s.db.Reader(), Principal{Owner: true}, j.ID); err == nil {
		return fresh
	}
	return j
}

func (s *Service) streamChat(ctx context.Context, w http.ResponseWriter, jw *jobWait, id, model string, created int64, includeUsage bool) error {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "system_fingerprint": nil,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if includeUsage {
			c["usage"] = nil
		}
		return c
	}
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// sendError ends the stream with an error object, as OpenAI's does.
	sendError := func(ce *chatError) {
		send(map[string]any{"error": map[string]any{"message": ce.Msg, "type": ce.Type, "param": nil, "code": ce.Code}})
		fmt.Fprint(w, "data: [DONE]\n\n")
		rc.Flush()
	}
	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return nil
	}
	heartbeat := time.NewTicker(s.cfg.Heartbeat.D())
	defer heartbeat.Stop()
	seen, streamed := 0, false
	for {
		chunks, done, final, changed := jw.since(seen)
		for _, t := range chunks {
			if streamed {
				t = "\n\n" + t
			}
			if !send(chunk(map[string]any{"content": t}, nil)) {
				return nil
			}
			streamed = true
		}
		seen += len(chunks)
		if done {
			final = s.refresh(final)
			if err := chatOutcome(final); err != nil {
				var ce *chatError
				errors.As(err, &ce)
				sendError(ce)
				return nil
			}
			if !streamed && final.resultText != "" {
				send(chunk(map[string]any{"content": final.resultText}, nil))
			}
			send(chunk(map[string]any{}, "stop"))
			if includeUsage {
				send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
					"system_fingerprint": nil, "choices": []any{}, "usage": chatUsage(final)})
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
			rc.Flush()
			return nil
		}
		select {
		case <-ctx.Done():
			if ce := waitEnded(ctx); ce.Code == codeTokenRevoked {
				sendError(ce) // a disconnected client reads nothing more
			}
			return nil
		case <-s.stopped:
			return nil
		case <-heartbeat.C:
			// An SSE comment line keeps proxies from timing out. It has no
			// blank line after it: the official openai-go client turns a
			// blank line after a comment into an empty event and fails to
			// decode it; the comment now joins the next chunk's event.
			if _, err := fmt.Fprint(w, ": keep-alive\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-changed:
		}
	}
}

// model is the OpenAI Model object of a profile.
func (s *Service) model(name string) map[string]any {
	prof := s.profiles[name]
	return map[string]any{
		"id": "bridge/" + name, "object": "model", "created": int64(0), "owned_by": "agent-bridge",
		"provider": prof.provider.Name(), "demo": prof.provider.Demo(), "available": prof.provider.Available() == nil,
	}
}

func (s *Service) handleModels(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	data := []any{}
	for _, name := range s.profileNames() {
		if p.MayUse(name) {
			data = append(data, s.model(name))
		}
	}
	return respond(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// handleModel is OpenAI's models.retrieve: GET /v1/models/{model}. A model
// the token may not use is as unknown as one that does not exist, like in
// the list.
func (s *Service) handleModel(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	id := strings.TrimPrefix(ps.ByName("model"), "/")
	name, ok := s.modelProfile(id)
	if !ok || !p.MayUse(name) {
		return &chatError{status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
			Msg: fmt.Sprintf("the model %q does not exist; see GET /v1/models", id)}
	}
	return respond(w, http.StatusOK, s.model(name))
}
