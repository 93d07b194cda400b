package callbacks

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/callbacks/verify"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/ingest"
)

// TestDoneWhen is the acceptance scenario with the real webhook
// ingestion service on the same stores: authorize localhost, create a
// configuration and a subscription over HTTP, post a GitHub webhook to the
// ingestion endpoint, and see the signed delivery arrive at a local receiver
// that verifies it with the documented snippet; the execution is visible
// through the filter endpoint.
func TestDoneWhen(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := startHarness(&harness{t: t, dir: t.TempDir(), yaml: fastYAML, extraMigs: ingest.Migrations(),
		mount: func(h *harness, r *httprouter.Router) func() {
			f, err := config.Parse("config.yaml", []byte(""))
			if err != nil {
				t.Fatal(err)
			}
			f.LookupEnv = func(string) (string, bool) { return "", false }
			svc, err := ingest.New(daemon.Deps{DataDir: h.dir, DB: h.db, Broker: h.broker, Box: h.box, Config: f,
				Logger: slog.New(slog.DiscardHandler), IsOwner: func(*http.Request) bool { return false }})
			if err != nil {
				t.Fatal(err)
			}
			svc.Routes(r)
			if err := svc.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			return func() { svc.Close() }
		}})

	type got struct {
		err    error
		header http.Header
		body   string
	}
	arrived := make(chan got, 4)
	receiver := newReceiver(t, nil)
	receiver.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		err := verify.Platform(testSecret, r.Header.Get("X-Platform-Signature"), r.Header.Get("X-Platform-Event-Id"), body, 5*time.Minute, time.Now())
		arrived <- got{err, r.Header.Clone(), string(body)}
		w.WriteHeader(200)
	})
	hookURL := strings.Replace(receiver.URL, "127.0.0.1", "localhost", 1) + "/hooks"

	h.must(201, "POST", pathDomains, `{"domain":"localhost"}`, nil)
	var cfg Configuration
	h.must(201, "POST", pathConfigs, `{"name":"my receiver","url":"`+hookURL+`","subscribedEventTypes":["push"],
		"signatureEnabled":true,"secret":"`+testSecret+`"}`, &cfg)
	h.must(201, "POST", pathSubscriptions, `{"name":"github","topicOrQueue":"github"}`, nil)

	req, _ := http.NewRequest("POST", h.srv.URL+"/api/v1/webhook/github", strings.NewReader(`{"ref":"refs/heads/main"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 202)
	ingestID := resp.Header.Get("X-Webhook-Event-Id")

	select {
	case g := <-arrived:
		is.NoErr(g.err) // verified with the README's snippet
		is.Equal(g.body, `{"ref":"refs/heads/main"}`)
		is.Equal(g.header.Get("X-Platform-Event-Type"), "push")
		is.Equal(g.header.Get("X-Platform-Event-Id"), ingestID)
	case <-time.After(10 * time.Second):
		t.Fatal("the webhook was not delivered")
	}
	var page PaginationResponse[Execution]
	waitFor(t, 15*time.Second, "the execution", func() bool {
		h.must(200, "POST", pathExecutions+"/filter", `{"filters":[{"field":"eventType","operator":"eq","value":"push"}]}`, &page)
		return page.TotalElements == 1 && page.Content[0].State == StateSucceeded
	})
	is.Equal(page.Content[0].ConfigurationID, cfg.ID)
	is.Equal(page.Content[0].EventID, ingestID)
	is.Equal(page.Content[0].Response.Status, 200)
}
