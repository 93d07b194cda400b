package callbacks

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/callbacks/verify"
)

const testSecret = "s3cr3t-value-for-tests-0123456789"

// TestEndToEndSignedDelivery is the "done when": authorize
// localhost, create a configuration and a subscription over HTTP, publish
// an event the way ingestion does, and verify the signed delivery at a
// local receiver with the documented snippet; the execution is visible
// through the filter endpoint.
func TestEndToEndSignedDelivery(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	verified := make(chan error, 1)
	rc := newReceiver(t, func(n int, r *http.Request) (int, http.Header, string) { return 200, nil, "thanks" })
	rc.Config.Handler = withVerify(rc.Config.Handler, verified)

	h.authorize("localhost")
	cfg := h.createConfig(map[string]any{
		"name": "github pushes", "url": strings.Replace(rc.URL, "127.0.0.1", "localhost", 1) + "/hooks?src=bridge",
		"subscribedEventTypes": []string{"push", "pull_request*"},
		"signatureEnabled":     true, "secret": testSecret,
	})
	is.True(cfg.SecretSet)
	sub := h.createSub(map[string]any{"name": "github", "topicOrQueue": "github"})
	is.Equal(sub.ConsumerGroupID, "callbacks-mgmt-consumer")

	evID := uuid.NewString()
	h.publish("github", "push", evID, `{"ref":"refs/heads/main"}`)
	h.publish("github", "issues", "", `{"ignored":true}`) // no configuration subscribes

	select {
	case err := <-verified:
		is.NoErr(err) // the documented snippet verifies the delivery
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery")
	}
	d := rc.deliveries()[0]
	is.Equal(string(d.body), `{"ref":"refs/heads/main"}`)
	is.Equal(d.header.Get(HeaderEventID), evID)
	is.Equal(d.header.Get(HeaderEventType), "push")
	is.Equal(d.header.Get("Content-Type"), "application/json")

	var ex []Execution
	waitFor(t, 15*time.Second, "a SUCCEEDED execution", func() bool {
		ex = h.executions(eqFilter("configurationId", cfg.ID))
		return len(ex) == 1 && ex[0].State == StateSucceeded
	})
	e := ex[0]
	is.Equal(e.EventID, evID)
	is.Equal(e.EventType, "push")
	is.Equal(e.Attempt, 1)
	is.Equal(e.Trigger, TriggerEvent)
	is.Equal(e.SubscriptionID, sub.ID)
	is.Equal(e.Response.Status, 200)
	is.Equal(e.Response.BodyExcerpt, "thanks")
	is.True(e.Request.Headers["X-Platform-Signature"] != "")
	is.True(e.DurationMs != nil)
	raw, _ := json.Marshal(e)
	is.True(!strings.Contains(string(raw), testSecret)) // the secret is never recorded
	time.Sleep(50 * time.Millisecond)
	is.Equal(rc.count(), 1) // "issues" went nowhere
}

// withVerify wraps a receiver handler with the README's verification.
func withVerify(next http.Handler, out chan<- error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := readAll(r)
		err := verify.Platform(testSecret, r.Header.Get("X-Platform-Signature"), r.Header.Get(HeaderEventID), body, 5*time.Minute, time.Now())
		r.Body = nopBody(body)
		next.ServeHTTP(w, r) // recorded before the test hears of it
		select {
		case out <- err:
		default:
		}
	})
}

// TestFailuresRetryThenFailPermanent: a receiver answering 500 gets every
// attempt, with growing delays, and the delivery ends FAILED_PERMANENT with
// each attempt recorded.
func TestFailuresRetryThenFailPermanent(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, map[string]string{
		"CALLBACK_RETRY_MAX_ATTEMPTS":  "4",
		"CALLBACK_RETRY_INITIAL_DELAY": "20",
		"CALLBACK_RETRY_MAX_DELAY":     "200",
		"CALLBACK_RETRY_MULTIPLIER":    "3",
	})
	rc := newReceiver(t, func(int, *http.Request) (int, http.Header, string) { return 500, nil, "boom" })
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "failing", "url": rc.URL, "subscribedEventTypes": []string{"order.created"}})
	h.createSub(map[string]any{"name": "orders", "topicOrQueue": "orders"})
	h.publish("orders", "order.created", "", `{"n":1}`)

	var ex []Execution
	waitFor(t, 10*time.Second, "FAILED_PERMANENT", func() bool {
		ex = h.executions(eqFilter("configurationId", cfg.ID))
		return len(ex) == 4 && ex[3].State == StateFailedPermanent
	})
	is.Equal(rc.count(), 4)
	for i, e := range ex {
		is.Equal(e.Attempt, i+1)
		is.Equal(e.MaxAttempts, 4)
		is.Equal(e.Response.Status, 500)
		is.Equal(e.Error.Code, ErrCodeHTTPStatus)
		is.Equal(e.DeliveryID, ex[0].DeliveryID)
		if i < 3 {
			is.Equal(e.State, StateFailedRetrying)
			is.True(e.NextAttemptAt != nil)
		}
	}
	is.True(strings.Contains(ex[3].Error.Message, "all 4 attempts used"))
	// Backoff grows: delays are drawn from [d/2, d] with d = 20, 60, 180 ms.
	got := rc.deliveries()
	for i, lo := range []time.Duration{10, 30, 90} {
		gap := got[i+1].at.Sub(got[i].at)
		is.True(gap >= lo*time.Millisecond) // attempt i+2 waited at least d/2
	}
	// Every attempt had a fresh signature timestamp and the same delivery id.
	is.Equal(got[0].header.Get(HeaderDeliveryID), got[3].header.Get(HeaderDeliveryID))
	is.Equal(got[3].header.Get(HeaderDeliveryAttempt), "4")
}

// TestNonRetryableAndGone: a 4xx other than 408/425/429 fails at once; 410
// disables the configuration and publishes an operational event.
func TestNonRetryableAndGone(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	var status atomic.Int32
	status.Store(400)
	rc := newReceiver(t, func(int, *http.Request) (int, http.Header, string) { return int(status.Load()), nil, "nope" })
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"*"}})
	opsRC := newReceiver(t, nil)
	ops := h.createConfig(map[string]any{"name": "ops", "url": opsRC.URL + "/ops", "subscribedEventTypes": []string{"callback.configuration.*"}})
	h.createSub(map[string]any{"name": "all"})

	h.publish("t1", "a", "", `{}`)
	waitFor(t, 15*time.Second, "FAILED_PERMANENT", func() bool {
		ex := h.executions(eqFilter("configurationId", cfg.ID))
		return len(ex) == 1 && ex[0].State == StateFailedPermanent
	})
	is.Equal(rc.count(), 1) // not retried

	status.Store(410)
	h.publish("t1", "b", "", `{}`)
	waitFor(t, 15*time.Second, "the configuration disabled", func() bool {
		var c Configuration
		h.must(200, "GET", pathConfigs+"/"+cfg.ID, nil, &c)
		return c.Status == StatusDisabled && strings.Contains(c.StatusReason, "410")
	})
	ex := h.executions(eqFilter("configurationId", cfg.ID), eqFilter("eventType", "b"))
	is.Equal(len(ex), 1)
	is.Equal(ex[0].Error.Code, ErrCodeGone)
	// The operational event went through the broker to the ops configuration.
	waitFor(t, 15*time.Second, "the operational event", func() bool {
		ex := h.executions(eqFilter("configurationId", ops.ID), eqFilter("eventType", OpsConfigurationDisabled))
		return len(ex) == 1 && ex[0].State == StateSucceeded
	})
	var opsEvent map[string]any
	is.NoErr(json.Unmarshal(opsRC.deliveries()[0].body, &opsEvent))
	is.Equal(opsEvent["configurationId"], cfg.ID)
	is.Equal(opsEvent["type"], OpsConfigurationDisabled)
	// Events for the disabled configuration are no longer delivered.
	before := rc.count()
	h.publish("t1", "c", "", `{}`)
	time.Sleep(100 * time.Millisecond)
	ex = h.executions(eqFilter("configurationId", cfg.ID), eqFilter("eventType", "c"))
	is.Equal(len(ex), 0)
	is.Equal(rc.count(), before)
}

// TestRedirectsNotFollowed: a 3xx is recorded as REDIRECT_NOT_FOLLOWED and
// the target never sees the delivery.
func TestRedirectsNotFollowed(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	target := newReceiver(t, nil)
	rc := newReceiver(t, func(int, *http.Request) (int, http.Header, string) {
		return 307, http.Header{"Location": {target.URL + "/elsewhere"}}, ""
	})
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "redir", "url": rc.URL, "subscribedEventTypes": []string{"x"},
		"signatureEnabled": true, "secret": testSecret})
	_, err := h.svc.Dispatch(t.Context(), cfg.ID, "x", uuid.NewString(), json.RawMessage(`{}`))
	is.NoErr(err)
	waitFor(t, 15*time.Second, "FAILED_PERMANENT", func() bool {
		ex := h.executions(eqFilter("configurationId", cfg.ID))
		return len(ex) == 1 && ex[0].State == StateFailedPermanent
	})
	ex := h.executions(eqFilter("configurationId", cfg.ID))
	is.Equal(ex[0].Error.Code, ErrCodeRedirect)
	is.Equal(ex[0].Response.Status, 307)
	is.Equal(target.count(), 0)
}

// TestFollowRedirectsChecksEachHop: with follow-redirects on, a hop to an
// authorized host is followed (without the signature when the host changes)
// and a hop to an unauthorized one is refused.
func TestFollowRedirectsChecksEachHop(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, map[string]string{"CALLBACK_FOLLOW_REDIRECTS": "true"})
	target := newReceiver(t, nil)
	hop := newReceiver(t, func(int, *http.Request) (int, http.Header, string) {
		return 307, http.Header{"Location": {strings.Replace(target.URL, "127.0.0.1", "localhost", 1)}}, ""
	})
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "r", "url": hop.URL, "subscribedEventTypes": []string{"x"},
		"signatureEnabled": true, "secret": testSecret})
	_, err := h.svc.Dispatch(t.Context(), cfg.ID, "x", uuid.NewString(), json.RawMessage(`{}`))
	is.NoErr(err)
	waitFor(t, 15*time.Second, "refused hop", func() bool {
		ex := h.executions(eqFilter("configurationId", cfg.ID))
		return len(ex) == 1 && ex[0].State == StateFailedPermanent
	})
	is.Equal(h.executions(eqFilter("configurationId", cfg.ID))[0].Error.Code, ErrCodeDomain)
	is.Equal(target.count(), 0)

	h.authorize("localhost")
	_, err = h.svc.Dispatch(t.Context(), cfg.ID, "x", uuid.NewString(), json.RawMessage(`{}`))
	is.NoErr(err)
	waitFor(t, 15*time.Second, "followed hop", func() bool { return target.count() == 1 })
	is.Equal(target.deliveries()[0].header.Get("X-Platform-Signature"), "") // not handed to another host
}

// TestSSRFRefusedAtDialTime: by default a loopback address is refused when
// connecting, including through a DNS name (localhost) that resolves to it.
func TestSSRFRefusedAtDialTime(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, "", nil) // defaults: loopback not allowed
	rc := newReceiver(t, nil)
	h.authorize("localhost")
	h.authorize("127.0.0.1")
	byName := h.createConfig(map[string]any{"name": "n", "url": strings.Replace(rc.URL, "127.0.0.1", "localhost", 1), "subscribedEventTypes": []string{"x"}})
	byIP := h.createConfig(map[string]any{"name": "i", "url": rc.URL, "subscribedEventTypes": []string{"x"}})
	for _, c := range []Configuration{byName, byIP} {
		_, err := h.svc.Dispatch(t.Context(), c.ID, "x", uuid.NewString(), json.RawMessage(`{}`))
		is.NoErr(err)
	}
	waitFor(t, 15*time.Second, "two refusals", func() bool {
		ex := h.executions(eqFilter("state", StateFailedPermanent))
		return len(ex) == 2
	})
	for _, e := range h.executions() {
		is.Equal(e.Error.Code, ErrCodeSSRF)
		is.True(strings.Contains(e.Error.Message, "loopback"))
		is.Equal(e.Attempt, 1) // a refusal is not retried
	}
	is.Equal(rc.count(), 0)
}

// TestCircuitBreakerHoldsThenHalfOpens: after the window's minimum calls
// fail, deliveries are held (not failed) while the breaker is open; once it
// half-opens and the trial calls succeed, held deliveries go out.
func TestCircuitBreakerHoldsThenHalfOpens(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, map[string]string{
		"CALLBACK_CB_WINDOW_SIZE": "10",
		"CALLBACK_CB_MIN_CALLS":   "4",
		// Open for 3 s: the six dispatches below and the checks that they
		// are held must all happen before the trial call, even on a loaded
		// machine.
		"CALLBACK_CB_WAIT_DURATION":   "3000",
		"CALLBACK_RETRY_MAX_ATTEMPTS": "1",
		"CALLBACK_DISPATCHER_THREADS": "1",
	})
	var healthy atomic.Bool
	rc := newReceiver(t, func(int, *http.Request) (int, http.Header, string) {
		if healthy.Load() {
			return 200, nil, ""
		}
		return 503, nil, ""
	})
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "flaky", "url": rc.URL, "subscribedEventTypes": []string{"x"}})
	// Taken before the failures, so before the breaker opens: the release
	// must come at least the open wait after it.
	beforeOpen := time.Now()
	for i := 0; i < 4; i++ {
		_, err := h.svc.Dispatch(t.Context(), cfg.ID, "x", uuid.NewString(), json.RawMessage(`{}`))
		is.NoErr(err)
	}
	waitFor(t, 15*time.Second, "4 failures", func() bool { return len(h.executions(eqFilter("state", StateFailedPermanent))) == 4 })
	for i := 0; i < 6; i++ {
		_, err := h.svc.Dispatch(t.Context(), cfg.ID, "x", uuid.NewString(), json.RawMessage(`{"later":`+strconv.Itoa(i)+`}`))
		is.NoErr(err)
	}
	waitFor(t, 15*time.Second, "6 held", func() bool { return len(h.executions(eqFilter("state", StateHeld))) == 6 })
	is.Equal(rc.count(), 4) // nothing sent while open
	healthy.Store(true)
	waitFor(t, 15*time.Second, "held deliveries released", func() bool {
		return len(h.executions(eqFilter("state", StateSucceeded))) == 6
	})
	is.True(time.Since(beforeOpen) >= 3*time.Second) // not before the open wait
	is.Equal(rc.count(), 10)
	state, _ := h.svc.disp.lanes[cfg.ID].br.snapshot()
	is.Equal(state, "CLOSED")
}

// TestBreakerTripsDisable: a breaker that keeps reopening disables the
// configuration and its held deliveries are cancelled.
func TestBreakerTripsDisable(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML+`
    circuit-breaker:
      disable-after-trips: 2
`, map[string]string{
		"CALLBACK_CB_WINDOW_SIZE":     "2",
		"CALLBACK_CB_MIN_CALLS":       "1",
		"CALLBACK_CB_WAIT_DURATION":   "2000", // the five dispatches below are made before the trial call, even on a loaded machine
		"CALLBACK_RETRY_MAX_ATTEMPTS": "1",
		"CALLBACK_DISPATCHER_THREADS": "1", // one call at a time: each outcome reaches the breaker before the next call
	})
	rc := newReceiver(t, func(int, *http.Request) (int, http.Header, string) { return 500, nil, "" })
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "dead", "url": rc.URL, "subscribedEventTypes": []string{"x"}})
	for i := 0; i < 5; i++ {
		_, err := h.svc.Dispatch(t.Context(), cfg.ID, "x", uuid.NewString(), json.RawMessage(`{}`))
		is.NoErr(err)
	}
	waitFor(t, 15*time.Second, "disabled", func() bool {
		var c Configuration
		h.must(200, "GET", pathConfigs+"/"+cfg.ID, nil, &c)
		return c.Status == StatusDisabled
	})
	waitFor(t, 15*time.Second, "nothing left open", func() bool {
		return len(h.executions(eqFilter("state", StatePending)))+len(h.executions(eqFilter("state", StateHeld))) == 0
	})
	cancelled := h.executions(eqFilter("state", StateCancelled))
	is.True(len(cancelled) >= 1)
	is.Equal(cancelled[0].Error.Code, ErrCodeInactive)
	is.Equal(rc.count(), 2) // two trips of one call each, then disabled
}
