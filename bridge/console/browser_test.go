package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/bridge/console"
)

// The browser tests drive the console in headless Chromium. They need a
// Chromium binary: BRIDGE_CHROMIUM, else /usr/bin/chromium or one on PATH
// (.ci/run installs it). Without one they are skipped, saying so.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BRIDGE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("skipping the console's browser tests: no Chromium found (install chromium, or set BRIDGE_CHROMIUM to a Chrome binary)")
	return ""
}

// page is one headless browser tab on the console, failing the test on
// any script error or console error (a CSP violation among them).
type page struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	errs []string
}

func newPage(t *testing.T) *page {
	t.Helper()
	// A fresh profile, removed once the browser has exited (t.TempDir's
	// cleanup could race the browser's last writes).
	profile, err := os.MkdirTemp("", "console-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1360, 940),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	p := &page{t: t, ctx: ctx}
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx) // closes the browser and waits for it
		cancelCtx()
		cancelAlloc()
		os.RemoveAll(profile)
	})
	chromedp.ListenTarget(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.APITypeError {
				return
			}
			for _, a := range ev.Args {
				msg += string(a.Value) + " " + a.Description
			}
		default:
			return
		}
		p.mu.Lock()
		p.errs = append(p.errs, msg)
		p.mu.Unlock()
	})
	if err := chromedp.Run(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	return p
}

func (p *page) run(actions ...chromedp.Action) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		p.t.Fatalf("browser: %v (page errors: %v)", err, p.errors())
	}
}

func (p *page) errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errs...)
}

// wait polls a JavaScript condition until it holds.
func (p *page) wait(what, expr string) {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second) // generous: CI runs this under -race on busy machines
	for {
		var ok bool
		if err := chromedp.Run(p.ctx, chromedp.Evaluate(expr, &ok)); err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			var text string
			_ = chromedp.Run(p.ctx, chromedp.Evaluate(`document.body.innerText`, &text))
			p.t.Fatalf("waited 60s for %s; page errors: %v; page text:\n%s", what, p.errors(), text)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *page) text(sel string) string {
	p.t.Helper()
	var s string
	p.run(chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

func (p *page) click(sel string) { p.t.Helper(); p.run(chromedp.Click(sel, chromedp.ByQuery)) }

func (p *page) set(sel, v string) { p.t.Helper(); p.run(chromedp.SetValue(sel, v, chromedp.ByQuery)) }

func (p *page) open(u string) { p.t.Helper(); p.run(chromedp.Navigate(u)) }

// gateway is a signed-in HTTP client of the console for the tests' setup:
// it goes through the same gateway as the pages.
type gateway struct {
	t    *testing.T
	e    *daemonEnv
	hc   *http.Client
	csrf string
}

func (g *gateway) call(method, path, body string, hdr map[string]string) res {
	g.t.Helper()
	h := map[string]string{console.CSRFHeader: g.csrf}
	for k, v := range hdr {
		h[k] = v
	}
	return call(g.t, g.hc, method, g.e.bridge+"/console/api/"+path, "", body, h)
}

func (g *gateway) must(status int, method, path, body string, hdr map[string]string) map[string]any {
	g.t.Helper()
	r := g.call(method, path, body, hdr)
	if r.status != status {
		g.t.Fatalf("%s %s: %d %v", method, path, r.status, r.body)
	}
	return r.body
}

func (g *gateway) env() string {
	id := g.must(200, "GET", "services/api/v1/identity", "", nil)
	w := id["workspaces"].([]any)[0].(map[string]any)
	p := w["projects"].([]any)[0].(map[string]any)
	e := p["environments"].([]any)[0].(map[string]any)
	return fmt.Sprintf("services/api/v1/tenants/%s/projects/%s/environments/%s", w["id"], p["id"], e["id"])
}

const chargeAction = `kind: action
id: console/charge
version: 1
sideEffect: idempotency_key
input: {type: object}
output:
  type: object
  required: [chargeId]
  properties:
    chargeId: {type: string}
timeout: 5s
retry: {maxAttempts: 1}
connector: http
config:
  method: POST
  url: http://127.0.0.1:9/v1/charges
`

const orderWorkflow = `kind: workflow
id: console/order
version: 1
input:
  type: object
  required: [orderId]
  properties:
    orderId: {type: string}
steps:
  - id: approval
    human:
      title: ="Approve order " + input.orderId
      assignees: ["group:sales"]
      decisions: [approve, reject]
    deadline: 1h
  - id: charge
    action: console/charge@1
    with:
      amount: 1
`

// publish publishes the test's workflow and activates it.
func (g *gateway) publish() {
	g.t.Helper()
	env := g.env()
	project := env[:strings.Index(env, "/environments/")]
	for _, d := range []struct{ coll, src string }{{"actions", chargeAction}, {"workflows", orderWorkflow}} {
		body, _ := json.Marshal(map[string]string{"source": d.src, "format": "yaml"})
		v := g.must(201, "POST", project+"/"+d.coll, string(body), map[string]string{"Idempotency-Key": "console-" + d.coll})
		if d.coll == "workflows" {
			g.must(201, "POST", env+"/activations", `{"published_version_id":"`+v["id"].(string)+`"}`, map[string]string{"Idempotency-Key": "console-activate"})
		}
	}
}

func TestConsoleInBrowser(t *testing.T) {
	p := newPage(t)
	is := is.New(t)
	defer func() { p.t = t }()
	e := startDaemon(t, t.TempDir(), "bridge:\n  max-concurrent-jobs: 32\n  profiles:\n    default: {provider: echo}\n")
	g := &gateway{t: t, e: e, hc: jar()}
	g.csrf = e.signIn(g.hc)

	t.Run("sign in with a code", func(t *testing.T) {
		p.t, is = t, is.New(t)
		// An empty daemon: every page shows its empty state, no error.
		code := call(t, http.DefaultClient, "POST", e.bridge+"/console/api/codes", e.owner, "", nil)
		p.open(code.body["url"].(string))
		p.wait("the overview", `!!document.querySelector('[data-testid=datadir]')`)
		is.Equal(p.text(`[data-testid=datadir]`), e.dir)
		var href string
		p.run(chromedp.Evaluate(`location.href`, &href))
		is.True(!strings.Contains(href, "code=")) // the code left the address bar
		p.wait("the charts", `document.querySelectorAll('[data-testid=chart]').length === 4`)
		p.wait("the subsystems", `document.querySelectorAll('.health.up').length === 5`)
		for _, s := range []string{"clients", "jobs", "runs", "webhooks", "callbacks"} {
			p.click(`[data-testid=nav-` + s + `]`)
			p.wait(s+" empty state", `!!document.querySelector('.empty') && !document.querySelector('.error:not([hidden])')`)
		}
		// The same code does not sign in twice.
		p2 := newPage(t)
		p2.open(code.body["url"].(string))
		p2.wait("the refusal", `!!document.querySelector('[data-testid=signin-error]:not([hidden])')`)
		is.True(strings.Contains(p2.text(`[data-testid=signin-error]`), "already used or expired"))
	})

	t.Run("mint and revoke a token", func(t *testing.T) {
		p.t, is = t, is.New(t)
		p.open(e.bridge + "/console/#/clients")
		p.wait("the token form", `!!document.querySelector('#client-id')`)
		// The API's refusal, in plain words.
		p.set(`#client-id`, "owner")
		p.click(`[data-testid=create-token]`)
		p.wait("the refusal", `(document.querySelector('[data-testid=token-form] .error:not([hidden])')?.textContent || '').includes('"owner" is reserved')`)
		p.set(`#client-id`, "ci-app")
		p.set(`#client-preset`, "workflows")
		p.set(`#client-profiles`, "default")
		p.click(`[data-testid=create-token]`)
		p.wait("the new token", `(document.querySelector('[data-testid=new-token]')||{}).textContent?.startsWith('brg_')`)
		tok := p.text(`[data-testid=new-token]`)
		st := call(t, http.DefaultClient, "GET", e.bridge+"/v1/bridge/status", tok, "", nil)
		is.Equal(st.status, 200)
		is.Equal(st.body["client"], "ci-app")
		p.wait("the client row", `!!document.querySelector('tr[data-client="ci-app"]')`)
		is.True(strings.Contains(p.text(`tr[data-client="ci-app"]`), "read, submit, control, workflows"))
		p.click(`[data-testid=revoke-ci-app]`) // asks again
		p.click(`[data-testid=revoke-ci-app]`)
		p.wait("the revoked state", `document.querySelector('tr[data-client="ci-app"] [data-state]')?.dataset.state === 'revoked'`)
		is.Equal(call(t, http.DefaultClient, "GET", e.bridge+"/v1/bridge/status", tok, "", nil).status, 401)
	})

	t.Run("submit a job and watch it finish live", func(t *testing.T) {
		p.t, is = t, is.New(t)
		p.open(e.bridge + "/console/#/jobs")
		p.wait("the job form", `!!document.querySelector('#job-prompt')`)
		p.set(`#job-prompt`, "Summarize the README")
		p.click(`[data-testid=submit-job]`)
		p.wait("the job page", `location.hash.startsWith('#/jobs/') && !!document.querySelector('[data-testid=job-head] [data-state]')`)
		p.wait("the job to succeed", `document.querySelector('[data-testid=job-head] [data-state]').dataset.state === 'succeeded'`)
		p.wait("the answer in the transcript", `[...document.querySelectorAll('[data-role=assistant]')].some(m => m.textContent.includes('Summarize the README'))`)

		// The list is live: a job submitted elsewhere appears and finishes
		// without a reload.
		p.click(`[data-testid=nav-jobs]`)
		p.wait("the list", `!!document.querySelector('tr[data-job]')`)
		p.run(chromedp.Evaluate(`window.__marker = 1`, nil))
		job := g.must(202, "POST", "bridge/jobs", `{"prompt":"from an app"}`, nil)
		id := job["id"].(string)
		p.wait("the new job, finished", `document.querySelector('tr[data-job="`+id+`"]')?.dataset.state === 'succeeded' && window.__marker === 1`)

		// A message continues the conversation.
		p.open(e.bridge + "/console/#/jobs/" + id)
		p.wait("the transcript", `!!document.querySelector('#message-text')`)
		p.set(`#message-text`, "and one more thing")
		p.click(`[data-testid=send-message]`)
		p.wait("the second answer", `[...document.querySelectorAll('[data-role=assistant]')].some(m => m.textContent.includes('one more thing'))`)
	})

	t.Run("complete a human task and resolve an incident", func(t *testing.T) {
		p.t, is = t, is.New(t)
		g.publish()
		run := g.must(202, "POST", "bridge/workflow-runs", `{"templateId":"console/order","inputs":{"orderId":"A-7"}}`, nil)
		runID := run["platformRunId"].(string)
		p.open(e.bridge + "/console/#/runs/" + runID)
		p.wait("the run", `!!document.querySelector('[data-testid=tab-tasks]')`)
		p.click(`[data-testid=tab-tasks]`)
		p.wait("the open task", `!!document.querySelector('[data-testid=tasks] [data-testid=claim]')`)
		p.click(`[data-testid=tasks] [data-testid=claim]`)
		p.wait("the claimed task", `!!document.querySelector('[data-testid=tasks] [data-testid=complete]')`)
		p.set(`[data-testid=tasks] [data-testid=decision]`, "approve")
		p.click(`[data-testid=tasks] [data-testid=complete]`)
		p.wait("the completed task", `document.querySelector('[data-testid=tasks] tr[data-task]')?.dataset.status === 'completed'`)

		// The charge then fails: an incident waits for an operator.
		for i := 0; ; i++ {
			p.click(`[data-testid=tab-incidents]`) // (re)loads the run's incidents
			var n int
			for j := 0; j < 20 && n == 0; j++ {
				time.Sleep(100 * time.Millisecond)
				p.run(chromedp.Evaluate(`document.querySelectorAll('[data-testid=incidents] [data-testid=resolve-form]').length`, &n))
			}
			if n == 1 {
				break
			}
			if i > 30 {
				t.Fatalf("no incident to resolve: %v", p.errors())
			}
		}
		p.set(`[data-testid=resolve-kind]`, "accept_reconciled_result")
		p.run(chromedp.Evaluate(`document.querySelector('[data-testid=resolve-kind]').dispatchEvent(new Event('change'))`, nil))
		p.set(`[data-testid=resolve-reason]`, "charged by phone")
		p.set(`[data-testid=resolve-output]`, `{"chargeId":"ch_manual_1"}`)
		p.set(`[data-testid=resolve-evidence]`, "bank statement")
		p.click(`[data-testid=resolve]`)
		p.wait("the resolved incident", `!document.querySelector('[data-testid=resolve-form]') && !!document.querySelector('[data-testid=incidents] [data-state=resolved]')`)
		p.wait("the run to succeed", `document.querySelector('[data-testid=run-head] [data-state]')?.dataset.state === 'succeeded'`)

		// Steps, logs, history and the replay verdict of the finished run.
		p.click(`[data-testid=tab-logs]`)
		p.wait("the run's log", `(document.querySelector('[data-testid=logs]')?.textContent || '').includes('run succeeded')`)
		p.click(`[data-testid=tab-replay]`)
		p.click(`[data-testid=check-replay]`)
		p.wait("the verdict", `(document.querySelector('[data-testid=replay]')?.textContent || '').includes('Verdict: consistent')`)
	})

	t.Run("replay a dead-lettered webhook", func(t *testing.T) {
		p.t, is = t, is.New(t)
		// A malformed JSON body is refused and dead-lettered with its payload.
		req, _ := http.NewRequest("POST", e.services+"/api/v1/webhook/github", strings.NewReader("{not json"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		is.NoErr(err)
		resp.Body.Close()
		is.Equal(resp.StatusCode, 400)
		var eventID string
		for i := 0; eventID == ""; i++ {
			items := g.must(200, "GET", "services/api/v1/webhook-dlq", "", nil)["items"].([]any)
			if len(items) > 0 {
				eventID = items[0].(map[string]any)["event_id"].(string)
			} else if i > 100 {
				t.Fatal("the dead letter was not indexed")
			}
			time.Sleep(100 * time.Millisecond)
		}
		p.open(e.bridge + "/console/#/webhooks")
		p.wait("the webhooks page", `!!document.querySelector('[data-testid=tab-dlq]')`)
		p.click(`[data-testid=tab-dlq]`)
		p.wait("the dead letter", `!!document.querySelector('tr[data-event="`+eventID+`"] [data-testid=replay]')`)
		p.click(`tr[data-event="` + eventID + `"] [data-testid=replay]`)
		for i := 0; ; i++ {
			d := g.must(200, "GET", "services/api/v1/webhook-dlq/"+eventID, "", nil)
			if d["replays"] == float64(1) {
				break
			}
			if i > 100 {
				t.Fatalf("not replayed: %v", d)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("page through 1,000 jobs", func(t *testing.T) {
		p.t, is = t, is.New(t)
		var wg sync.WaitGroup
		ids := make(chan string, 1000)
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < 1000; i += 8 {
					r := call(t, http.DefaultClient, "POST", e.bridge+"/v1/bridge/jobs", e.owner, fmt.Sprintf(`{"prompt":"bulk %d"}`, i), nil)
					if r.status != 202 {
						t.Errorf("job %d: %v", i, r)
						return
					}
					ids <- r.body["id"].(string)
				}
			}()
		}
		wg.Wait()
		is.Equal(len(ids), 1000)
		// Let them finish, so the list stands still while it is paged.
		for i := 0; ; i++ {
			st := call(t, http.DefaultClient, "GET", e.bridge+"/v1/bridge/status", e.owner, "", nil)
			jobs := st.body["jobs"].(map[string]any)
			if jobs["queued"] == float64(0) && jobs["running"] == float64(0) {
				break
			}
			if i > 600 {
				t.Fatalf("the jobs did not finish: %v", jobs)
			}
			time.Sleep(100 * time.Millisecond)
		}
		p.open(e.bridge + "/console/#/overview")
		p.click(`[data-testid=nav-jobs]`)
		p.wait("a full first page", `document.querySelectorAll('[data-testid=jobs] tr[data-job]').length === 50`)
		var first, second string
		p.run(chromedp.Evaluate(`document.querySelector('[data-testid=jobs] tr[data-job]').dataset.job`, &first))
		for page := 2; page <= 21; page++ {
			p.click(`[data-testid=jobs] [data-testid=next-page]`)
			p.wait(fmt.Sprintf("page %d", page), fmt.Sprintf(`(document.querySelector('[data-testid=jobs] .pager')?.textContent || '').includes('page %d ·')`, page))
		}
		p.run(chromedp.Evaluate(`document.querySelector('[data-testid=jobs] tr[data-job]').dataset.job`, &second))
		is.True(first != second)
		var disabled bool
		p.run(chromedp.Evaluate(`document.querySelector('[data-testid=jobs] [data-testid=next-page]').disabled`, &disabled))
		is.True(disabled) // 1,003 jobs: the 21st page is the last
	})

	t.Run("overview with data", func(t *testing.T) {
		p.t, is = t, is.New(t)
		p.open(e.bridge + "/console/#/overview")
		p.wait("the charts with data", `[...document.querySelectorAll('[data-testid=chart] strong')].filter(s => s.textContent !== '0').length >= 2`)
		if path := os.Getenv("BRIDGE_CONSOLE_SCREENSHOT"); path != "" {
			var png []byte
			p.run(chromedp.Evaluate(`document.getElementById('toasts')?.remove(); true`, nil), chromedp.Sleep(300*time.Millisecond), chromedp.FullScreenshot(&png, 100))
			is.NoErr(os.WriteFile(path, png, 0o644))
		}
	})

	if errs := p.errors(); len(errs) > 0 {
		t.Fatalf("the console logged errors: %s", strings.Join(errs, "\n"))
	}
}
