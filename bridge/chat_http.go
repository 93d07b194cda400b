package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
)

// The OpenAI-compatible surface (docs/bridge-api.md, "Chat Completions"):
// its errors are in OpenAI's shape, {"error":{"message","type","param","code"}}.

// writeOpenAIError writes {"error":{"message","type","param","code"}} and
// returns the status it answered.
func writeOpenAIError(w http.ResponseWriter, err error) int {
	var ce *chatError
	var be *httpx.BodyError
	st, typ, code, param, msg := 0, "", "", "", ""
	switch {
	case errors.As(err, &ce):
		st, typ, code = chatAnswer(ce.Code)
		param, msg = ce.Param, ce.Msg
	case errors.As(err, &be):
		st, typ, code, param, msg = be.Status, "invalid_request_error", "invalid_body", be.Field, be.Msg
		if refusedEncoding(err) {
			code = CodeInvalidRequest // as the bridge's other routes answer it
		}
		if be.Status != http.StatusRequestEntityTooLarge && be.Status != http.StatusUnsupportedMediaType {
			st = http.StatusBadRequest
		}
	default:
		e := asError(err) // a bridge code, or internal
		st, typ, code = chatAnswer(e.Code)
		msg = e.Message
	}
	if st == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="bridge"`)
	}
	httpx.WriteJSON(w, st, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nullIfEmpty(param), "code": nullIfEmpty(code)}})
	return st
}

func (s *Service) handleChat(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	var req ChatRequest
	if err := httpx.DecodeBytes(data, &req, httpx.DecodeOptions{AllowUnknown: true}); err != nil {
		return err
	}
	run, err := s.StartChat(r.Context(), p, req)
	if err != nil {
		return err
	}
	defer run.Close()
	created := run.Job.CreatedAt.Unix()
	completionID := "chatcmpl-" + run.Job.ID
	w.Header().Set("X-Bridge-Job-ID", run.Job.ID)
	if run.Stream {
		return s.streamChat(w, run, completionID, created)
	}
	final, err := run.Wait()
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, map[string]any{
		"id": completionID, "object": "chat.completion", "created": created, "model": run.Model,
		"system_fingerprint": nil,
		"choices": []any{map[string]any{
			"index": 0, "logprobs": nil, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": final.resultText, "refusal": nil},
		}},
		"usage": chatUsage(final),
	})
}

// streamChat streams a completion as OpenAI's chunks (data: lines, then
// data: [DONE]).
func (s *Service) streamChat(w http.ResponseWriter, run *ChatRun, id string, created int64) error {
	ctx, jw, model, includeUsage := run.ctx, run.wait, run.Model, run.IncludeUsage
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
		_, typ, code := chatAnswer(ce.Code)
		send(map[string]any{"error": map[string]any{"message": ce.Msg, "type": typ, "param": nil, "code": code}})
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

func (s *Service) handleModels(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	return respond(w, http.StatusOK, map[string]any{"object": "list", "data": s.Models(p)})
}

// handleModel is OpenAI's models.retrieve: GET /v1/models/{model}.
func (s *Service) handleModel(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	m, err := s.Model(p, strings.TrimPrefix(ps.ByName("model"), "/"))
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, m)
}
