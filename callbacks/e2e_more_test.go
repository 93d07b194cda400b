package callbacks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestPendingRetriesSurviveRestart: a retry scheduled before a shutdown is
// persisted and delivered by the next Service on the same database.
func TestPendingRetriesSurviveRestart(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	// The retry waits 2 s, so that the first Service is closed while it is
	// pending even on a loaded machine; the receiver only turns healthy
	// once that Service is closed, so the delivery that succeeds can only
	// be the second Service's.
	h := newHarness(t, fastYAML, map[string]string{"CALLBACK_RETRY_INITIAL_DELAY": "2000", "CALLBACK_RETRY_MAX_DELAY": "2000"})
	var healthy atomic.Bool
	rc := newReceiver(t, func(int, *http.Request) (int, http.Header, string) {
		if healthy.Load() {
			return 204, nil, ""
		}
		return 502, nil, ""
	})
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "r", "url": rc.URL, "subscribedEventTypes": []string{"x"}})
	h.createSub(map[string]any{"name": "s", "topicOrQueue": "t"})
	h.publish("t", "x", "", `{"keep":"me"}`)
	waitFor(t, 15*time.Second, "first attempt failed", func() bool {
		return len(h.executions(eqFilter("state", StateFailedRetrying))) == 1
	})
	// A restart before the retry is due; healthy is set between the two
	// Services, because the second one sends a retry that fell due while
	// it was starting at once.
	h.close()
	failed := rc.count() // every one of these was answered 502
	healthy.Store(true)
	h.open()
	waitFor(t, 15*time.Second, "the retry delivered after restart", func() bool {
		ex := h.executions(eqFilter("configurationId", cfg.ID))
		return len(ex) == failed+1 && ex[failed].State == StateSucceeded
	})
	// Normally failed is 1; should a stalled machine let the first Service
	// retry before it closed, that attempt failed too and the next retry is
	// the one pending across the restart.
	ex := h.executions(eqFilter("configurationId", cfg.ID))
	for i, e := range ex[:failed] { // the attempts made before the restart survived it
		is.Equal(e.State, StateFailedRetrying)
		is.Equal(e.Attempt, i+1)
	}
	is.Equal(ex[failed].Attempt, failed+1) // a retry of the same delivery, not a new one
	is.Equal(rc.count(), failed+1)
	is.Equal(string(rc.deliveries()[failed].body), `{"keep":"me"}`)
	// The broker message was acknowledged: no duplicate delivery after restart.
	time.Sleep(100 * time.Millisecond)
	is.Equal(len(h.executions(eqFilter("configurationId", cfg.ID))), failed+1)
	is.Equal(rc.count(), failed+1)
}

// TestAttemptInterruptedByShutdownIsRedelivered: an attempt cut off by
// Close is not recorded as failed; its PENDING row is delivered after restart.
func TestAttemptInterruptedByShutdownIsRedelivered(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	release := make(chan struct{})
	var calls atomic.Int32
	rc := newReceiver(t, func(n int, r *http.Request) (int, http.Header, string) {
		if calls.Add(1) == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		return 200, nil, ""
	})
	defer close(release)
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "r", "url": rc.URL, "subscribedEventTypes": []string{"x"}})
	_, err := h.svc.Dispatch(t.Context(), cfg.ID, "x", uuid.NewString(), json.RawMessage(`{}`))
	is.NoErr(err)
	waitFor(t, 15*time.Second, "the attempt in flight", func() bool { return rc.count() == 1 })
	h.restart()
	waitFor(t, 15*time.Second, "redelivered", func() bool {
		ex := h.executions(eqFilter("configurationId", cfg.ID))
		return len(ex) == 1 && ex[0].State == StateSucceeded
	})
	is.Equal(rc.count(), 2) // at least once
}

// TestSlowEndpointDoesNotDelayHealthyOne: a configuration whose endpoint
// hangs occupies only its own lane.
func TestSlowEndpointDoesNotDelayHealthyOne(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, map[string]string{"CALLBACK_DISPATCHER_THREADS": "4"})
	unblock := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(unblock) }) }
	defer release() // a failing test must not leave the slow calls hanging
	slow := newReceiver(t, func(n int, r *http.Request) (int, http.Header, string) {
		select {
		case <-unblock:
		case <-r.Context().Done():
		}
		return 200, nil, ""
	})
	fast := newReceiver(t, nil)
	h.authorize("127.0.0.1")
	// The slow calls' timeout outlasts every wait below: they end only when
	// the test releases them, so nothing but a lane of its own can let the
	// healthy deliveries through first.
	h.createConfig(map[string]any{"name": "slow", "url": slow.URL, "subscribedEventTypes": []string{"e"}, "timeoutMs": 60000})
	h.createConfig(map[string]any{"name": "fast", "url": fast.URL, "subscribedEventTypes": []string{"e"}})
	h.createSub(map[string]any{"name": "s", "topicOrQueue": "t"})
	start := time.Now()
	const n = 40
	for i := 0; i < n; i++ {
		h.publish("t", "e", "", fmt.Sprintf(`{"i":%d}`, i))
	}
	waitFor(t, 15*time.Second, "every healthy delivery", func() bool { return fast.count() == n })
	took := time.Since(start)
	is.True(slow.count() <= 4) // the slow lane is saturated at its pool size, its calls still held
	release()
	waitFor(t, 15*time.Second, "the slow deliveries", func() bool { return slow.count() == n })
	t.Logf("%d healthy deliveries in %s while the slow endpoint held its lane", n, took)
}

// TestSubscriptionChangesApplyWithoutRestart: creating, deactivating and
// changing a subscription takes effect at once.
func TestSubscriptionChangesApplyWithoutRestart(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	rc := newReceiver(t, nil)
	h.authorize("127.0.0.1")
	h.createConfig(map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"*"}})

	h.publish("alpha", "a", "", `{"n":0}`) // before any subscription: never delivered
	sub := h.createSub(map[string]any{"name": "s", "topicOrQueue": "alpha", "eventTypePatterns": []string{"a*"}})
	h.publish("alpha", "a.one", "", `{"n":1}`)
	h.publish("alpha", "b", "", `{"n":2}`) // filtered by eventTypePatterns
	waitFor(t, 15*time.Second, "first delivery", func() bool { return rc.count() == 1 })
	is.Equal(string(rc.deliveries()[0].body), `{"n":1}`)

	f := false
	h.must(200, "PUT", pathSubscriptions+"/"+sub.ID, map[string]any{"name": "s", "topicOrQueue": "alpha", "active": f}, nil)
	h.publish("alpha", "a.two", "", `{"n":3}`)
	time.Sleep(150 * time.Millisecond)
	is.Equal(rc.count(), 1)

	h.must(200, "PUT", pathSubscriptions+"/"+sub.ID, map[string]any{"name": "s", "topicOrQueue": "beta"}, nil)
	h.publish("beta", "z", "", `{"n":4}`)
	waitFor(t, 15*time.Second, "delivery from the new topic", func() bool { return rc.count() == 2 })
	is.Equal(string(rc.deliveries()[1].body), `{"n":4}`)

	h.must(204, "DELETE", pathSubscriptions+"/"+sub.ID, nil, nil)
	h.publish("beta", "z", "", `{"n":5}`)
	time.Sleep(150 * time.Millisecond)
	is.Equal(rc.count(), 2)
}

// TestSharedGroupSubscriptionsSeeEveryMessage: two subscriptions of the
// default group on one topic each get their events (one consumer per group).
func TestSharedGroupSubscriptionsSeeEveryMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastYAML, nil)
	rc := newReceiver(t, nil)
	h.authorize("127.0.0.1")
	h.createConfig(map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"*"}})
	h.createSub(map[string]any{"name": "pushes", "topicOrQueue": "github", "eventTypePatterns": []string{"push"}})
	h.createSub(map[string]any{"name": "prs", "topicOrQueue": "github", "eventTypePatterns": []string{"pull_request"}})
	for i := 0; i < 10; i++ {
		h.publish("github", []string{"push", "pull_request"}[i%2], "", `{}`)
	}
	waitFor(t, 15*time.Second, "all ten", func() bool { return rc.count() == 10 })
}

// TestEnvelopeFieldsAndDuplicates: the type and id may come from a JSON
// envelope; a message consumed twice is delivered once.
func TestEnvelopeFieldsAndDuplicates(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	rc := newReceiver(t, nil)
	h.authorize("127.0.0.1")
	h.createConfig(map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"run.completed"}})
	h.createSub(map[string]any{"name": "runs", "topicOrQueue": "platform.runs"})
	id := uuid.NewString()
	env := fmt.Sprintf(`{"id":%q,"type":"run.completed","data":{"run":7}}`, id)
	is.NoErr(h.broker.Publish(t.Context(), brokerMsg("platform.runs", env), brokerMsg("platform.runs", env)))
	waitFor(t, 15*time.Second, "delivery", func() bool { return rc.count() >= 1 })
	time.Sleep(100 * time.Millisecond)
	is.Equal(rc.count(), 1) // same event id: one delivery
	is.Equal(rc.deliveries()[0].header.Get(HeaderEventID), id)
	is.Equal(string(rc.deliveries()[0].body), env)
}

// TestManualRetryAndReplay covers POST /callback-executions/retry and /replay.
func TestManualRetryAndReplay(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, map[string]string{"CALLBACK_RETRY_MAX_ATTEMPTS": "1"})
	var healthy atomic.Bool
	rc := newReceiver(t, func(int, *http.Request) (int, http.Header, string) {
		if healthy.Load() {
			return 200, nil, ""
		}
		return 500, nil, ""
	})
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"x", "y"}})
	h.createSub(map[string]any{"name": "s", "topicOrQueue": "t"})
	since := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	h.publish("t", "x", "", `{"first":true}`)
	var failed []Execution
	waitFor(t, 15*time.Second, "FAILED_PERMANENT", func() bool {
		failed = h.executions(eqFilter("state", StateFailedPermanent))
		return len(failed) == 1
	})

	healthy.Store(true)
	var retried Execution
	_, hdr, _ := h.call("POST", pathExecutions+"/retry", RetryRequest{ExecutionID: failed[0].ID}, &retried)
	is.Equal(retried.Trigger, TriggerManualRetry)
	is.Equal(retried.RetryOf, failed[0].ID)
	is.Equal(retried.Attempt, 1)
	is.True(retried.DeliveryID != failed[0].DeliveryID)
	is.Equal(hdr.Get("Location"), pathExecutions+"/"+retried.ID)
	waitFor(t, 15*time.Second, "retry succeeded", func() bool {
		var e Execution
		h.must(200, "GET", pathExecutions+"/"+retried.ID, nil, &e)
		return e.State == StateSucceeded
	})

	// Errors of retry.
	h.must(404, "POST", pathExecutions+"/retry", RetryRequest{ExecutionID: uuid.NewString()}, nil)
	h.must(422, "POST", pathExecutions+"/retry", RetryRequest{ExecutionID: "nope"}, nil)
	h.must(400, "POST", pathExecutions+"/retry", `{"executionId":"x","extra":1}`, nil)

	h.publish("t", "y", "", `{"second":true}`)
	waitFor(t, 15*time.Second, "second event", func() bool { return rc.count() == 3 })

	var res ReplayResult
	h.must(202, "POST", pathExecutions+"/replay", map[string]any{"since": since}, &res)
	is.Equal(res.Events, 2)
	is.Equal(res.Deliveries, 2)
	is.True(!res.Truncated)
	waitFor(t, 15*time.Second, "replayed", func() bool {
		return len(h.executions(eqFilter("trigger", TriggerReplay), eqFilter("state", StateSucceeded))) == 2
	})
	is.Equal(rc.count(), 5)

	one := 1
	h.must(202, "POST", pathExecutions+"/replay", ReplayRequest{Since: since, ConfigurationID: cfg.ID, Limit: &one}, &res)
	is.Equal(res.Events, 1)
	is.True(res.Truncated)
	h.must(422, "POST", pathExecutions+"/replay", map[string]any{"since": "yesterday"}, nil)
	h.must(422, "POST", pathExecutions+"/replay", map[string]any{"since": since, "limit": 0}, nil)
	h.must(422, "POST", pathExecutions+"/replay", map[string]any{"since": since, "limit": 10001}, nil)
	h.must(422, "POST", pathExecutions+"/replay", map[string]any{"since": since, "until": "2000-01-01T00:00:00Z"}, nil)
	h.must(404, "POST", pathExecutions+"/replay", map[string]any{"since": since, "configurationId": uuid.NewString()}, nil)

	// An open execution cannot be retried; an inactive configuration neither.
	h.must(200, "PUT", pathConfigs+"/"+cfg.ID, map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"x"}, "status": "INACTIVE"}, nil)
	h.must(409, "POST", pathExecutions+"/retry", RetryRequest{ExecutionID: failed[0].ID}, nil)
	h.must(409, "POST", pathExecutions+"/replay", map[string]any{"since": since, "configurationId": cfg.ID}, nil)
}

// TestDomainRemovalStopsDeliveries: removing a domain cancels what is
// waiting for it and stops new deliveries.
func TestDomainRemovalStopsDeliveries(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	// The retry waits 3s: long enough that the domain is removed while it is
	// still pending, even on a loaded machine.
	h := newHarness(t, fastYAML, map[string]string{"CALLBACK_RETRY_INITIAL_DELAY": "3000", "CALLBACK_RETRY_MAX_DELAY": "3000"})
	rc := newReceiver(t, func(int, *http.Request) (int, http.Header, string) { return 500, nil, "" })
	d := h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"x"}})
	_, err := h.svc.Dispatch(t.Context(), cfg.ID, "x", uuid.NewString(), json.RawMessage(`{}`))
	is.NoErr(err)
	waitFor(t, 15*time.Second, "first failure", func() bool { return len(h.executions(eqFilter("state", StateFailedRetrying))) == 1 })
	h.must(204, "DELETE", pathDomains+"/"+d.ID, nil, nil)
	waitFor(t, 15*time.Second, "retry cancelled", func() bool {
		ex := h.executions(eqFilter("state", StateCancelled))
		return len(ex) == 1 && ex[0].Error.Code == ErrCodeDomain
	})
	is.Equal(rc.count(), 1)
	_, err = h.svc.Dispatch(t.Context(), cfg.ID, "x", uuid.NewString(), json.RawMessage(`{}`))
	is.Equal(ErrorCode(err), EConflict)
}

// TestStandardWebhooksAndRotation: the STANDARD_WEBHOOKS scheme signs
// as its reference libraries verify, and a rotated secret keeps signing
// next to the new one during the grace period.
func TestStandardWebhooksAndRotation(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	// A 5 s grace: the delivery sent right after the rotation must start
	// within it even on a loaded machine.
	h := newHarness(t, fastYAML+`
    signature:
      rotation-grace: 5s
`, nil)
	rc := newReceiver(t, nil)
	h.authorize("127.0.0.1")
	oldSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef01234567"))
	newSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("zyxwvutsrqponmlkjihgfedcba"))
	in := map[string]any{"name": "sw", "url": rc.URL, "subscribedEventTypes": []string{"x"},
		"signatureEnabled": true, "signatureScheme": SchemeStandardWebhooks, "secret": oldSecret}
	cfg := h.createConfig(in)
	send := func() delivery {
		n := rc.count()
		_, err := h.svc.Dispatch(t.Context(), cfg.ID, "x", uuid.NewString(), json.RawMessage(`{"a":1}`))
		is.NoErr(err)
		waitFor(t, 15*time.Second, "delivery", func() bool { return rc.count() == n+1 })
		return rc.deliveries()[n]
	}
	d := send()
	is.NoErr(verifyStandard(oldSecret, d))
	is.True(verifyStandard(newSecret, d) != nil)

	in["secret"] = newSecret
	var updated Configuration
	h.must(200, "PUT", pathConfigs+"/"+cfg.ID, in, &updated)
	is.True(updated.PreviousSecretValidUntil != nil)
	d = send()
	is.NoErr(verifyStandard(oldSecret, d)) // grace period: both sign
	is.NoErr(verifyStandard(newSecret, d))
	is.Equal(len(strings.Fields(d.header.Get(HeaderWebhookSig))), 2)

	time.Sleep(time.Until(*updated.PreviousSecretValidUntil) + 10*time.Millisecond)
	d = send()
	is.NoErr(verifyStandard(newSecret, d))
	is.True(verifyStandard(oldSecret, d) != nil) // grace over
}

// verifyStandard checks a delivery as the Standard Webhooks libraries do.
func verifyStandard(secret string, d delivery) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	id, ts := d.header.Get("webhook-id"), d.header.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("bad timestamp %q", ts)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(d.body)
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, s := range strings.Fields(d.header.Get("webhook-signature")) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("no matching signature")
}
