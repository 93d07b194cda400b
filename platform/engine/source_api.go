package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// This file serves platform/source (provider sources, docs/platform-api.md
// "Provider sources"): the schemas a source's mapping is checked against
// when it is created, and the signal a receipt delivers to a waiting run.

// targetArtifact is the part of a workflow artifact a source's static
// check reads: the input schema and the signal steps' payload schemas.
type targetArtifact struct {
	Input json.RawMessage `json:"input"`
	Nodes []struct {
		Signal string          `json:"signal"`
		Schema json.RawMessage `json:"schema"`
	} `json:"nodes"`
}

func (s *Service) targetArtifact(ctx context.Context, q store.Querier, project, version string) (targetArtifact, error) {
	var a targetArtifact
	v, err := catalog.PublishedVersion(ctx, q, project, version)
	if err != nil {
		return a, fmt.Errorf("engine: workflow version %s: %w", version, err)
	}
	if err := json.Unmarshal(v.Artifact, &a); err != nil {
		return a, fmt.Errorf("engine: workflow version %s: decode artifact: %w", version, err)
	}
	return a, nil
}

// InputSchema answers the input JSON schema of the workflow an active
// activation of sc runs ("null" when it declares none). Refusals are
// POST E/runs' for the activation (422 unknown, 409 retired).
func (s *Service) InputSchema(ctx context.Context, sc auth.Scope, activation string) (json.RawMessage, error) {
	r := s.db.Reader()
	a, err := readActivation(ctx, r, sc.Environment, activation)
	if err != nil {
		return nil, err
	}
	art, err := s.targetArtifact(ctx, r, sc.Project, a.versionID)
	if err != nil {
		return nil, err
	}
	return art.Input, nil
}

// ErrRunEnded: the run has ended and accepts no signals.
var ErrRunEnded = errors.New("engine: the run has ended")

// SignalSchemas answers the payload schemas of the signal steps of run
// (in environment sc) that wait for name (none: the workflow declares no
// such signal). ErrRunNotFound, or ErrRunEnded for a run that has ended.
func (s *Service) SignalSchemas(ctx context.Context, sc auth.Scope, run, name string) ([]json.RawMessage, error) {
	r := s.db.Reader()
	rr, err := s.getRun(ctx, r, sc.Environment, run)
	if errors.Is(err, errNotFound) {
		return nil, fmt.Errorf("%w: no run %s", ErrRunNotFound, run)
	}
	if err != nil {
		return nil, err
	}
	if rr.State.Status.Terminal() {
		return nil, ErrRunEnded
	}
	art, err := s.targetArtifact(ctx, r, rr.Project, rr.PublishedVersionID)
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for _, n := range art.Nodes {
		if n.Signal == name {
			out = append(out, n.Schema)
		}
	}
	return out, nil
}

// SignalLocal delivers the signal name with payload to run of environment
// sc in one transaction with commit (run after it; an error undoes the
// signal and is answered as is), as POST E/runs/{run}/signals does. It
// answers the accepted sequence; id is the signal event's id. ErrRunNotFound, ErrRunEnded, or the
// route's refusals (*api.Error: 422 payload, 429 capacity).
func (s *Service) SignalLocal(ctx context.Context, sc auth.Scope, run, name, id string, payload json.RawMessage, commit func(tx *sql.Tx) error) (int64, error) {
	var seq int64
	err := s.db.WriteThen(ctx, func(tx *sql.Tx) error {
		r, err := s.getRun(ctx, tx, sc.Environment, run)
		if errors.Is(err, errNotFound) {
			return fmt.Errorf("%w: no run %s", ErrRunNotFound, run)
		}
		if err != nil {
			return err
		}
		if r.State.Status.Terminal() {
			return ErrRunEnded
		}
		r, _, _, err = s.Deliver(ctx, tx, r.Environment, r.ID, kernel.Event{Kind: kernel.EventSignalReceived, ID: id, Signal: name, Payload: payload})
		if err != nil {
			return asProblem(refusal(err))
		}
		seq = r.State.Seq
		if commit != nil {
			return commit(tx)
		}
		return nil
	}, s.notify)
	return seq, err
}
