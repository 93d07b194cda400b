package bridge

import (
	"context"
	"database/sql"
	"strings"
	"unicode/utf8"
)

// MessageRequest is the body of POST .../messages: {text}, nothing else.
type MessageRequest struct {
	Text *string `json:"text"`
}

// MessageList is a job's conversation (JSON name order).
type MessageList struct {
	JobID     string    `json:"jobId"`
	Messages  []Message `json:"messages"`
	SessionID string    `json:"sessionId"`
}

// MessageAccepted answers a posted message (JSON name order).
type MessageAccepted struct {
	Job     Job     `json:"job"`
	Message Message `json:"message"`
}

// Messages reads the conversation of a job p may see.
func (s *Service) Messages(ctx context.Context, p Principal, id string) (MessageList, error) {
	j, err := s.Job(ctx, p, id)
	if err != nil {
		return MessageList{}, err
	}
	msgs, err := s.messages(ctx, j.ID)
	return MessageList{JobID: j.ID, SessionID: j.SessionID, Messages: msgs}, err
}

// PostMessage queues a user message that continues a job's conversation;
// a finished job is queued again. With an Idempotency-Key, a repeat answers
// the stored reply (replayed non-nil).
func (s *Service) PostMessage(ctx context.Context, p Principal, id string, req MessageRequest, key Idempotency) (out MessageAccepted, replayed *Replay, err error) {
	if req.Text == nil {
		return out, nil, errf(CodeInvalidRequest, "text is required")
	}
	text := *req.Text
	if n := utf8.RuneCountInString(text); n < 1 || n > maxTextChars || strings.TrimSpace(text) == "" {
		return out, nil, errf(CodeInvalidRequest, "text must be 1 to %d characters, not only whitespace", maxTextChars)
	}
	k, err := newIdem("POST /v1/bridge/jobs/"+id+"/messages", key.Key, MessageRequest{Text: req.Text}, key.Body)
	if err != nil {
		return out, nil, err
	}
	err = s.write(ctx, func(tx *sql.Tx, ev *pending) error {
		var err error
		if replayed, err = s.replay(ctx, tx, p, k); err != nil || replayed != nil {
			return err
		}
		job, err := s.getJob(ctx, txq{tx}, p, id)
		if err != nil {
			return err
		}
		from := job.State
		if job.State, err = Next(job.State, ActMessage); err != nil {
			return err
		}
		job.UpdatedAt = s.now().UTC()
		if from.Terminal() {
			job.FinishedAt, job.LastError, job.resultText = nil, nil, ""
		}
		m, err := insertMessage(tx, job, "user", text, "pending", job.UpdatedAt)
		if err != nil {
			return err
		}
		if err := s.audit(tx, id, job.Attempt, "message.user", map[string]any{"seq": m.Seq, "chars": len([]rune(text))}, map[string]any{"text": text}); err != nil {
			return err
		}
		if err := s.saveState(tx, &job, from, ActMessage, ev); err != nil {
			return err
		}
		ev.add(job.Client, id, "message.created", m)
		out = MessageAccepted{Message: m, Job: job}
		return s.remember(ctx, tx, p, k, 202, out)
	})
	if err != nil {
		return MessageAccepted{}, nil, err
	}
	if replayed == nil {
		s.sched.kick()
	}
	return out, replayed, nil
}
