package steptest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/trigger"
)

// errMoved undoes a test run start whose webhook-id another delivery took.
var errMoved = errors.New("steptest: the delivery was accepted concurrently")

// CreateActivation activates a draft revision for a limited time in sc
// for principal by (POST E/test-activations): the policy (403), the draft
// (422), the policy for its side effect (403) and the acknowledgment (409)
// are checked first.
func (s *Service) CreateActivation(ctx context.Context, sc auth.Scope, by string, req TestActivationRequest) (TestActivation, error) {
	ttl, err := checkActivation(&req)
	if err != nil {
		return TestActivation{}, err
	}
	rd := s.db.Reader()
	if ok, err := environmentExists(ctx, rd, sc.Tenant, sc.Project, sc.Environment); err != nil || !ok {
		if err == nil {
			err = api.NotFound("environment")
		}
		return TestActivation{}, err
	}
	pol, err := getPolicy(ctx, rd, sc.Environment)
	if err != nil {
		return TestActivation{}, err
	}
	if pol.TestCalls == CallsDisabled {
		return TestActivation{}, pol.permit(SideEffectNone)
	}
	d, err := s.compileDraft(ctx, sc, CodeActivationDraf, req.DraftID, req.DraftRevision)
	if err != nil {
		return TestActivation{}, err
	}
	effect := d.art.draftEffect()
	if err := pol.permit(effect); err != nil {
		return TestActivation{}, err
	}
	if err := confirm(effect, req.AcknowledgedSideEffect); err != nil {
		return TestActivation{}, err
	}
	art, err := withTimeout(d.art, ttl)
	if err != nil {
		return TestActivation{}, err
	}
	created := s.timestamp()
	r := taRow{TestActivation: TestActivation{ID: s.newID(), SideEffect: effect, ExpiresAt: created.Add(ttl), Status: ActivationActive,
		DraftID: req.DraftID, DraftRevision: req.DraftRevision, CreatedAt: created, CreatedBy: by},
		Tenant: sc.Tenant, Project: sc.Project, Environment: sc.Environment}
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		b, err := s.bind(ctx, tx, sc, d, art, req.InputDefaults, req.ConnectionBindings, by)
		if err != nil {
			return err
		}
		r.ActivationID, r.ArtifactDigest = b.activationID, b.digest
		return insertTA(ctx, tx, r)
	})
	if err != nil {
		return TestActivation{}, err
	}
	return r.TestActivation, nil
}

// live reads a live test activation of principal by: 404 for anyone
// else's or a deleted one, 410 PF-TESTACTIVATION-EXPIRED once it expired
// (its routes are cleaned up here when the scan has not yet).
func (s *Service) live(ctx context.Context, sc auth.Scope, by, id string) (taRow, error) {
	r, err := getTA(ctx, s.db.Reader(), sc.Environment, id, by)
	switch {
	case errors.Is(err, errNotFound) || (err == nil && r.Status == ActivationDeleted):
		return r, api.NotFound("test activation")
	case err != nil:
		return r, err
	case r.Status == ActivationActive && !s.timestamp().Before(r.ExpiresAt):
		if err := s.expire(ctx, r); err != nil {
			return r, err
		}
		r.Status = ActivationExpired
	}
	if r.Status == ActivationExpired {
		return r, refused(CodeExpired, "the test activation expired at %s; create a new one", r.ExpiresAt.Format(time.RFC3339))
	}
	return r, nil
}

// expire ends an expired test activation: its activation is retired and
// its listen routes removed; its test runs stay readable.
func (s *Service) expire(ctx context.Context, r taRow) error {
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		ok, err := endTA(ctx, tx, r.ID, ActivationExpired, s.timestamp())
		if err != nil || !ok {
			return err
		}
		return s.retire(ctx, tx, r.Environment, r.ActivationID, r.CreatedBy, "test activation "+r.ID+" expired")
	})
}

// DeleteActivation ends a live test activation of principal by now.
func (s *Service) DeleteActivation(ctx context.Context, sc auth.Scope, by, id string) (TestActivation, error) {
	r, err := s.live(ctx, sc, by, id)
	if err != nil {
		return TestActivation{}, err
	}
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		ok, err := endTA(ctx, tx, r.ID, ActivationDeleted, s.timestamp())
		if err != nil || !ok {
			return err
		}
		return s.retire(ctx, tx, r.Environment, r.ActivationID, by, "test activation "+r.ID+" deleted")
	})
	if err != nil {
		return TestActivation{}, err
	}
	r.Status = ActivationDeleted
	return r.TestActivation, nil
}

// StartRun starts a test run of a live test activation of principal by.
func (s *Service) StartRun(ctx context.Context, sc auth.Scope, by, id string, req TestRunRequest) (engine.Run, error) {
	r, err := s.live(ctx, sc, by, id)
	if err != nil {
		return engine.Run{}, err
	}
	if err := s.allowed(ctx, r); err != nil {
		return engine.Run{}, err
	}
	info, err := s.runs.StartActivation(ctx, engine.LocalStart{Scope: sc, ActivationID: r.ActivationID, Input: req.Input, By: by, Test: true})
	if err != nil {
		return engine.Run{}, startProblem(err)
	}
	return info.Run, nil
}

// allowed checks the environment's current policy against a test
// activation's side effect (it may have changed since its creation).
func (s *Service) allowed(ctx context.Context, r taRow) error {
	pol, err := getPolicy(ctx, s.db.Reader(), r.Environment)
	if err != nil {
		return err
	}
	return pol.permit(r.SideEffect)
}

// Listen opens a signed listen route for a live test activation of
// principal by.
func (s *Service) Listen(ctx context.Context, sc auth.Scope, by, id string, req ListenRequest) (Listen, error) {
	if err := checkListen(&req); err != nil {
		return Listen{}, err
	}
	r, err := s.live(ctx, sc, by, id)
	if err != nil {
		return Listen{}, err
	}
	var secret string
	var key []byte
	if req.SecretRef == SecretNew {
		if secret, key, err = trigger.NewSecret(); err != nil {
			return Listen{}, err
		}
	} else {
		key, err = s.keys(ctx, sc.Environment, strings.TrimPrefix(req.SecretRef, SecretTriggerPrefix))
		if errors.Is(err, trigger.ErrNoTrigger) {
			return Listen{}, at422(CodeActivationRef, "/secret_ref", "the environment has no webhook trigger with that id")
		}
		if err != nil {
			return Listen{}, err
		}
	}
	l := listenRow{ID: s.newID(), TestActivationID: r.ID, MaxBody: req.MaxBody, Tolerance: req.Tolerance, CreatedAt: s.timestamp()}
	if l.sealed, err = s.box.Seal(key, listenAD(l.ID)); err != nil {
		return Listen{}, fmt.Errorf("steptest: seal listen key: %w", err)
	}
	if err := s.db.Write(ctx, func(tx *sql.Tx) error { return insertListen(ctx, tx, l) }); err != nil {
		return Listen{}, err
	}
	return Listen{ID: l.ID, TestURL: testWebhookPath(l.ID), ExpiresAt: r.ExpiresAt, MaxBody: l.MaxBody, Tolerance: l.Tolerance, Secret: secret}, nil
}

// listenAD binds a sealed listen key to its route.
func listenAD(id string) []byte { return []byte("platform/test-listen/" + id) }

// Deliver accepts a signed test delivery to listen route id: verify, then
// start a test run with the body as input (once per webhook-id).
func (s *Service) Deliver(ctx context.Context, id string, h http.Header, body []byte) (TestDelivery, error) {
	l, err := getListen(ctx, s.db.Reader(), id)
	if errors.Is(err, errNotFound) {
		return TestDelivery{}, api.NotFound("listen route")
	}
	if err != nil {
		return TestDelivery{}, err
	}
	sc := auth.Scope{Tenant: l.TA.Tenant, Project: l.TA.Project, Environment: l.TA.Environment}
	if _, err := s.live(ctx, sc, l.TA.CreatedBy, l.TA.ID); err != nil {
		return TestDelivery{}, err
	}
	if len(body) > l.MaxBody {
		return TestDelivery{}, &api.Error{Code: api.CodeRequestTooLarge,
			Message: fmt.Sprintf("the body has %d bytes; this listen route accepts at most %d", len(body), l.MaxBody)}
	}
	key, err := s.box.Open(l.sealed, listenAD(l.ID))
	if err != nil {
		return TestDelivery{}, fmt.Errorf("steptest: open listen key: %w", err)
	}
	wid, err := trigger.Verify(h, body, key, s.now(), time.Duration(l.Tolerance)*time.Second)
	if err != nil {
		return TestDelivery{}, err
	}
	out := TestDelivery{TestActivationID: l.TA.ID, WebhookID: wid}
	if run, err := deliveryRun(ctx, s.db.Reader(), l.ID, wid); err != nil || run != "" {
		out.RunID, out.Replayed = run, true
		return out, err
	}
	if err := s.allowed(ctx, l.TA); err != nil {
		return TestDelivery{}, err
	}
	if !json.Valid(body) || !object(body) || len(body) == 0 {
		return TestDelivery{}, api.Invalid("", "the body must be a JSON object (the run input)")
	}
	info, err := s.runs.StartActivation(ctx, engine.LocalStart{Scope: sc, ActivationID: l.TA.ActivationID, Input: body, By: l.TA.CreatedBy, Test: true,
		Commit: func(tx *sql.Tx, run engine.RunInfo) error {
			ok, err := insertDelivery(ctx, tx, l.ID, wid, run.ID, s.timestamp())
			if err == nil && !ok {
				return errMoved
			}
			return err
		}})
	if errors.Is(err, errMoved) {
		out.RunID, err = deliveryRun(ctx, s.db.Reader(), l.ID, wid)
		out.Replayed = true
		return out, err
	}
	if err != nil {
		return TestDelivery{}, startProblem(err)
	}
	out.RunID = info.ID
	return out, nil
}
