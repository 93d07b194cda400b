package engine

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// readRun loads run id of environment sc with its program: PF-NOT-FOUND
// without the environment or the run (an id that is not a canonical UUID
// names none), errLegacy with the row for a run whose state cannot be
// shown.
func (s *Service) readRun(ctx context.Context, q store.Querier, sc auth.Scope, id string) (runRow, *program, error) {
	if !auth.IsCanonicalUUID(id) {
		return runRow{}, nil, notFound("run")
	}
	if err := requireEnvironment(ctx, q, sc); err != nil {
		return runRow{}, nil, err
	}
	r, err := s.getRun(ctx, q, sc.Environment, id)
	if errors.Is(err, errNotFound) {
		return r, nil, notFound("run")
	}
	if err != nil {
		return r, nil, err // errLegacy with the row
	}
	p, err := s.program(ctx, q, r.Project, r.PublishedVersionID)
	return r, p, err
}

// checkText checks a body field: at most max characters and, when
// required, not blank. field is its name, also its JSON Pointer.
func checkText(field, v string, max int, required bool) error {
	if required && strings.TrimSpace(v) == "" {
		return invalid("/"+field, "%s must not be blank", field)
	}
	if utf8.RuneCountInString(v) > max {
		return invalid("/"+field, "%s has at most %d characters", field, max)
	}
	return nil
}

// checkStart validates a start request and answers its input (compact,
// "{}" when absent).
func checkStart(req *StartRequest) (json.RawMessage, error) {
	if !auth.IsCanonicalUUID(req.ActivationID) {
		return nil, invalid("/activation_id", "activation_id must be a canonical lowercase UUID")
	}
	if err := checkText("correlation_key", req.CorrelationKey, MaxKeyLen, false); err != nil {
		return nil, err
	}
	if err := checkText("business_key", req.BusinessKey, MaxKeyLen, false); err != nil {
		return nil, err
	}
	raw := bytes.TrimSpace(req.Input)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '{' {
		return nil, invalid("/input", "input must be a JSON object")
	}
	if len(raw) > MaxInputBytes {
		return nil, invalid("/input", "input has %d bytes; at most %d are accepted", len(raw), MaxInputBytes)
	}
	return raw, nil
}

// mergeDefaults fills absent top-level properties of input from defaults.
func mergeDefaults(input json.RawMessage, defaults map[string]json.RawMessage) (json.RawMessage, error) {
	if len(defaults) == 0 {
		return input, nil
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, invalid("/input", "input must be a JSON object")
	}
	for k, v := range defaults {
		if _, ok := in[k]; !ok {
			in[k] = v
		}
	}
	out, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("engine: encode input: %w", err)
	}
	return out, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// GetRun answers run id of environment sc.
func (s *Service) GetRun(ctx context.Context, sc auth.Scope, id string) (Run, error) {
	r, p, err := s.readRun(ctx, s.db.Reader(), sc, id)
	if err != nil {
		return Run{}, err
	}
	return view(r, p), nil
}

// checkCancel validates the reason of a cancellation.
func checkCancel(reason string) error { return checkText("reason", reason, MaxReasonLen, true) }

// Cancel cancels run id of environment sc for reason (see within for tx).
// Cancelling a cancelled run answers it unchanged and records nothing;
// another ended run is PF-RUNTIME-STATE. The answer has
// ExternalEffectsMayContinue set: whether issued work may still finish.
// A run whose stored state this version cannot show is cancelled too,
// its state replaced (cancelLegacy).
func (s *Service) Cancel(ctx context.Context, tx *sql.Tx, sc auth.Scope, id, reason string) (Run, error) {
	if err := checkCancel(reason); err != nil {
		return Run{}, err
	}
	var out Run
	err := s.within(ctx, tx, func(tx *sql.Tx) error {
		r, p, err := s.readRun(ctx, tx, sc, id)
		if errors.Is(err, errLegacy) {
			out, err = s.cancelLegacy(ctx, tx, r, reason)
			return err
		}
		if err != nil {
			return err
		}
		if _, err := s.apply(ctx, tx, &r, p, kernel.Event{Kind: kernel.EventCancelRequested, Reason: reason}); err != nil &&
			!errors.Is(err, kernel.ErrNoChange) {
			return refusal(err)
		}
		out = view(r, p)
		may := r.State.ExternalEffectsMayContinue
		out.ExternalEffectsMayContinue = &may
		return nil
	})
	return out, err
}

// History answers up to limit accepted events of run id of environment
// sc after sequence after, in sequence order (secret values redacted).
func (s *Service) History(ctx context.Context, sc auth.Scope, id string, after int64, limit int) ([]HistoryEvent, error) {
	rd := s.db.Reader()
	r, p, err := s.readRun(ctx, rd, sc, id)
	if err != nil {
		return nil, err
	}
	if err := refuseArchivedRun(r); err != nil {
		return nil, err
	}
	rows, err := s.listEvents(ctx, rd, id, after, limit)
	if err != nil {
		return nil, err
	}
	items := make([]HistoryEvent, 0, len(rows))
	for _, e := range rows {
		payload, err := p.sec.event(e.Payload)
		if err != nil {
			return nil, err
		}
		items = append(items, HistoryEvent{Seq: e.Seq, Kind: e.Kind, At: e.At, Event: payload, Records: e.Records})
	}
	return items, nil
}
