package source

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/kernel"
)

// errMoved: the receipt changed between the dispatcher's read and its
// write (another turn handled it, or it was retried); nothing is done.
var errMoved = errors.New("source: receipt changed during dispatch")

// DueReceipts is the scheduler loop's "due provider receipts" phase
// (engine.Phase): for up to MaxEnvironments environments it dispatches
// up to DueBatch due pending receipts each, in parallel, each within
// DispatchDeadline, and answers whether a batch was full.
//
// A run start (kind run) or a signal (kind signal) commits in one
// transaction with the receipt's move to dispatched, conditioned on the
// receipt still being pending with the same attempt count: an event
// identity starts at most one run, across restarts and SIGKILL. Delivery
// is at least once: a dispatch cut short before its commit is retried.
func (s *Service) DueReceipts(ctx context.Context) (bool, error) {
	now := s.now().UTC()
	rd := s.db.Reader()
	envs, err := dueEnvironments(ctx, rd, now, MaxEnvironments)
	if err != nil {
		return false, err
	}
	full := false
	var first error
	var mu sync.Mutex
	for _, env := range envs {
		ids, err := dueReceipts(ctx, rd, env, now, DueBatch)
		if err != nil {
			return full, err
		}
		full = full || len(ids) == DueBatch
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dctx, cancel := context.WithTimeout(ctx, s.deadline)
				defer cancel()
				if err := s.dispatch(dctx, id); err != nil && !errors.Is(err, errMoved) {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	return full, first
}

// authority answers the capability a source's owner lost ("" when none):
// the target capability and connection.bind in the source's environment.
func (s *Service) authority(ctx context.Context, src Source) (string, error) {
	sc := auth.Scope{Tenant: src.Scope.TenantID, Project: src.Scope.ProjectID, Environment: src.Scope.EnvironmentID}
	for _, cp := range []auth.Capability{capability(src.Kind), auth.CapConnectionBind} {
		d, err := s.standing(ctx, src.PrincipalID, cp, sc)
		if err != nil {
			return "", err
		}
		if !d.Allowed {
			return string(cp), nil
		}
	}
	return "", nil
}

// dispatch handles one due receipt.
func (s *Service) dispatch(ctx context.Context, id string) error {
	rd := s.db.Reader()
	rc, err := getReceipt(ctx, rd, id)
	if err != nil {
		return err
	}
	if rc.Status != StatusPending || rc.NextAttemptAt == nil || rc.NextAttemptAt.After(s.now()) {
		return nil
	}
	src, err := getSource(ctx, rd, rc.SourceID)
	if err != nil {
		return err
	}
	settleAs := func(status, reason string) error { return s.settle(ctx, rc, status, reason) }
	if src.Disabled {
		return settleAs(StatusBlocked, ReasonBindingRevoked)
	}
	p := s.packages.Exact(src.Provider, src.Package, src.PackageVersion, src.AdapterVersion)
	if p == nil {
		return settleAs(StatusBlocked, ReasonPackage)
	}
	if !p.Dispatches(rc.EventKind) {
		switch rc.EventKind {
		case "unsupported":
			return settleAs(StatusIgnored, ReasonUnsupported)
		case "ping", "status":
			return settleAs(StatusIgnored, ReasonLifecycle)
		}
		return settleAs(StatusIgnored, ReasonNotDispatchable)
	}
	if why, err := s.authority(ctx, src); err != nil {
		return err
	} else if why != "" {
		return settleAs(StatusBlocked, ReasonAuthorityLost)
	}
	payload, err := s.box.OpenString(rc.sealed, "platform/receipt/"+rc.ID)
	if err != nil {
		return fmt.Errorf("source: open the payload of receipt %s: %w", rc.ID, err)
	}
	value, err := mapEvent(src.Mapping, rc.Receipt, json.RawMessage(payload))
	if err != nil {
		return settleAs(StatusFailed, ReasonMapping)
	}
	sc := auth.Scope{Tenant: src.Scope.TenantID, Project: src.Scope.ProjectID, Environment: src.Scope.EnvironmentID}
	now := s.timestamp()
	if src.Kind == KindRun {
		if len(value) == 0 || value[0] != '{' {
			return settleAs(StatusFailed, ReasonSchema)
		}
		_, err = s.runs.StartActivation(ctx, engine.LocalStart{Scope: sc, ActivationID: *src.ActivationID, Input: value, By: src.PrincipalID,
			Commit: func(tx *sql.Tx, run engine.RunInfo) error {
				return s.settleTx(ctx, tx, rc, StatusDispatched, "", &run.ID, nil, now)
			}})
	} else {
		signal := s.newID()
		_, err = s.runs.SignalLocal(ctx, sc, *src.RunID, *src.Signal, signal, value, func(tx *sql.Tx) error {
			return s.settleTx(ctx, tx, rc, StatusDispatched, "", src.RunID, &signal, now)
		})
	}
	if err == nil || errors.Is(err, errMoved) {
		return err
	}
	var ae *api.Error
	switch {
	case errors.Is(err, engine.ErrRunEnded), errors.Is(err, engine.ErrRunNotFound):
		return settleAs(StatusFailed, ReasonTargetFinished)
	case !errors.As(err, &ae) || ae.IsCapacity() || ae.IsServerSide():
		s.log.Info("source: transient dispatch failure", "receipt", rc.ID, "err", err)
		return settleAs(StatusPending, ReasonTransient)
	case ae.IsInvalid() && (len(ae.Diagnostics) == 0 || ae.Diagnostics[0].Path != "/activation_id"):
		return settleAs(StatusFailed, ReasonSchema)
	case ae.Code == kernel.CodeRuntimeState:
		return settleAs(StatusFailed, ReasonTargetFinished)
	}
	return settleAs(StatusFailed, ReasonTargetUnavailable)
}

// settleLimit bounds the write of an outcome: the provider dispatcher's
// 4 second SQL limit.
const settleLimit = 4 * time.Second

// settle stores a dispatch outcome other than dispatched. The write is
// not bound to the dispatch's deadline: a dispatch cut off by it is a
// transient failure that must still be recorded with its cooldown, or the
// receipt would be retried at once, every turn.
func (s *Service) settle(ctx context.Context, rc receiptRow, status, reason string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleLimit)
	defer cancel()
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		return s.settleTx(ctx, tx, rc, status, reason, nil, nil, s.timestamp())
	})
}

// settleTx moves rc to status in tx (pending: after the cooldown).
func (s *Service) settleTx(ctx context.Context, tx *sql.Tx, rc receiptRow, status, reason string, run, signal *string, at time.Time) error {
	var next *time.Time
	if status == StatusPending {
		t := at.Add(Cooldown)
		next = &t
	}
	ok, err := settle(ctx, tx, rc.ID, rc.Attempts, status, reason, next, run, signal, at)
	if err != nil {
		return err
	}
	if !ok {
		return errMoved
	}
	return nil
}

// mapEvent evaluates a source's mapping for one event with the kernel's
// expression evaluator: input.event is the normalized event, input.kind,
// input.event_id and input.account_id name it. No mapping: the event.
func mapEvent(mapping string, rc Receipt, payload json.RawMessage) (json.RawMessage, error) {
	if mapping == "" {
		return payload, nil
	}
	binding, err := json.Marshal(map[string]any{"config": map[string]string{"expr": mapping}})
	if err != nil {
		return nil, err
	}
	in, err := json.Marshal(map[string]any{"event": payload, "kind": rc.EventKind, "event_id": rc.EventID, "account_id": rc.AccountID})
	if err != nil {
		return nil, err
	}
	return kernel.EvalBindingConfig(binding, in, nil)
}
