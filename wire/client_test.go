package wire_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/client"
)

// TestTypedClientAgainstTheDaemon drives the daemon through the client
// package the CLI uses: typed calls of the platform API (publish with an
// idempotent replay, activate, start, read and list runs), and both error
// shapes decoded into *client.Error (the platform's problem+json with its
// diagnostics, the bridge's {"error":{...}}).
func TestTypedClientAgainstTheDaemon(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := context.Background()
	e := newDaemonEnv(t)
	p, env := e.platform()

	id, err := p.Identity(ctx)
	is.NoErr(err)
	is.True(len(id.Workspaces) > 0)
	is.Equal(id.Workspaces[0].ID, env.Tenant)

	// A publish replayed with its Idempotency-Key answers the same version.
	req := client.PublishRequest{Source: greetingWorkflow, Format: client.FormatYAML}
	v, replayed, err := p.Publish(ctx, env, "workflows", "client-e2e-publish", req)
	is.NoErr(err)
	is.True(!replayed)
	again, replayed, err := p.Publish(ctx, env, "workflows", "client-e2e-publish", req)
	is.NoErr(err)
	is.True(replayed)
	is.Equal(again.ID, v.ID)

	act, err := p.Activate(ctx, env, "client-e2e-activate", client.ActivationRequest{PublishedVersionID: v.ID})
	is.NoErr(err)
	is.Equal(act.Status, client.ActivationActive)
	got, err := p.Activation(ctx, env, act.ID)
	is.NoErr(err)
	is.Equal(got.PublishedVersionID, v.ID)

	run, err := p.StartRun(ctx, env, "client-e2e-run", client.StartRequest{ActivationID: act.ID, Input: json.RawMessage(`{"name":"Ada","title":"Dr"}`)})
	is.NoErr(err)
	deadline := time.Now().Add(20 * time.Second)
	for !client.RunTerminal(run.Status) {
		if time.Now().After(deadline) {
			t.Fatalf("run %s is still %s", run.ID, run.Status)
		}
		time.Sleep(20 * time.Millisecond)
		run, err = p.Run(ctx, env, run.ID)
		is.NoErr(err)
	}
	is.Equal(run.Status, client.RunSucceeded)
	is.Equal(string(run.State.Output), `{"greeting":"hello Dr Ada"}`)

	page, err := p.Runs(ctx, env, url.Values{"limit": {"1"}})
	is.NoErr(err)
	is.Equal(len(page.Items), 1)
	is.Equal(page.Items[0].ID, run.ID)
	all, err := client.Collect[client.RunSummary](ctx, p.D, env.Path("/runs?limit=1"))
	is.NoErr(err)
	is.Equal(len(all), 1)

	// The platform's problem+json: status, code, and the diagnostics
	// (where the body is wrong) in the message; nothing starts.
	_, err = p.StartRun(ctx, env, "client-e2e-bad", client.StartRequest{ActivationID: act.ID, Input: json.RawMessage(`{"title":"Dr"}`)})
	var ae *client.Error
	is.True(errors.As(err, &ae))
	is.Equal(ae.Status, http.StatusUnprocessableEntity)
	is.Equal(ae.Code, "PF-VALIDATION")
	_, err = p.D.Do(ctx, http.MethodPost, env.Path("/runs"), map[string]string{client.HeaderIdempotencyKey: "client-e2e-bad-2"},
		map[string]any{"activation_id": act.ID, "bogus": 1, "business_key": 5}, nil)
	is.True(errors.As(err, &ae))
	is.Equal(ae.Status, http.StatusUnprocessableEntity)
	is.Equal(ae.Message, `the request body does not match the contract; /bogus: unknown property "bogus"; /business_key: must be a string`)
	page, err = p.Runs(ctx, env, url.Values{"limit": {"10"}})
	is.NoErr(err)
	is.Equal(len(page.Items), 1) // the refused starts changed nothing
	_, err = p.Run(ctx, env, "00000000-0000-4000-8000-000000000000")
	is.True(errors.As(err, &ae))
	is.Equal(ae.Status, http.StatusNotFound)
	is.True(strings.HasPrefix(ae.Code, "PF-"))

	// The bridge's {"error":{...}}.
	br := client.New(e.bridge, e.token("reader", "read"), e.hc)
	_, err = br.Do(ctx, http.MethodGet, "/v1/bridge/jobs/00000000-0000-4000-8000-000000000000", nil, nil, nil)
	is.True(errors.As(err, &ae))
	is.Equal(ae.Status, http.StatusNotFound)
	is.Equal(ae.Code, "not_found")
	is.True(ae.Message != "")
	// A refused token, in the same shape.
	_, err = br.WithToken("brg_not-a-token").Do(ctx, http.MethodGet, "/v1/bridge/jobs", nil, nil, nil)
	is.True(errors.As(err, &ae))
	is.Equal(ae.Status, http.StatusUnauthorized)
	is.True(ae.Code != "")
}
