package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/platform/platformtest"
	"github.com/agentbridge/bridge/wire"
)

// threeStep is the workflow every system runs: an echo action, a noop
// action and a final step (the same as platform's BenchmarkDurableThreeStepRuns).
const threeStep = `kind: workflow
id: bench/three
version: 1
input:
  type: object
  properties:
    name: {type: string}
steps:
  - id: greet
    action: acme/greet@1
    with:
      name: =input.name
  - id: nothing
    action: acme/nothing@1
    with: {}
  - id: done
    succeed:
      result: =steps.greet.output.name
`

// ours is a real daemon (what `bridge serve` runs) in this process, on
// loopback ports, with an operator token and an activated 3-step workflow.
type ours struct {
	d        *daemon.Daemon
	client   *http.Client
	services string
	token    string
	runsPath string
	act      string
	seq      int
}

func startOurs(dir string) (*ours, error) {
	cfg := daemon.DefaultConfig()
	cfg.Listen.BridgePort, cfg.Listen.ServicesPort = 0, 0
	d, err := daemon.Start(context.Background(), wire.Options(daemon.Options{DataDir: dir, Config: cfg, DisableKeyring: true,
		Build: daemon.BuildInfo{Version: "bench"}}))
	if err != nil {
		return nil, err
	}
	o := &ours{d: d, services: d.State().ServicesURL,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, DisableCompression: true}, Timeout: time.Minute}}
	owner, err := daemon.ReadOwnerToken(filepath.Join(dir, daemon.OwnerTokenFile))
	if err != nil {
		return nil, err
	}
	if o.token, err = o.deviceToken(owner); err != nil {
		return nil, fmt.Errorf("sign in: %w", err)
	}
	var tenant, project, env string
	if err := d.DB.Reader().QueryRow(`SELECT e.tenant_id, e.project_id, e.id FROM platform_environments e LIMIT 1`).Scan(&tenant, &project, &env); err != nil {
		return nil, fmt.Errorf("local workspace: %w", err)
	}
	p := "/api/v1/tenants/" + tenant + "/projects/" + project
	var wf struct{ ID string }
	for i, src := range []string{platformtest.GreetAction, platformtest.NothingAction, threeStep} {
		coll := "actions"
		if i == 2 {
			coll = "workflows"
		}
		if err := o.post(p+"/"+coll, fmt.Sprint("pub-", i), map[string]string{"source": src, "format": "yaml"}, 201, &wf); err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
	}
	o.runsPath = p + "/environments/" + env + "/runs"
	var act struct{ ID string }
	if err := o.post(p+"/environments/"+env+"/activations", "act", map[string]string{"published_version_id": wf.ID}, 201, &act); err != nil {
		return nil, fmt.Errorf("activate: %w", err)
	}
	o.act = act.ID
	return o, nil
}

func (o *ours) close() error { return o.d.Shutdown() }

// deviceToken signs in as the local operator with the device flow the
// CLI uses (`bridge platform login`), approved with the owner token.
func (o *ours) deviceToken(owner string) (string, error) {
	form := func(path string, v url.Values, bearer string) (map[string]any, error) {
		req, _ := http.NewRequest("POST", o.services+"/idp"+path, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		res, err := o.client.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		if res.StatusCode != 200 {
			return nil, fmt.Errorf("%s: %d %v", path, res.StatusCode, out)
		}
		return out, nil
	}
	dc, err := form("/oauth/device/code", url.Values{"client_id": {"bridge-cli"}}, "")
	if err != nil {
		return "", err
	}
	if _, err := form("/oauth/device/approve", url.Values{"user_code": {fmt.Sprint(dc["user_code"])}}, owner); err != nil {
		return "", err
	}
	tok, err := form("/oauth/token", url.Values{"client_id": {"bridge-cli"}, "device_code": {fmt.Sprint(dc["device_code"])},
		"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}}, "")
	if err != nil {
		return "", err
	}
	return fmt.Sprint(tok["access_token"]), nil
}

func (o *ours) post(path, key string, body any, want int, out any) error {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", o.services+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+o.token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := o.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		return fmt.Errorf("POST %s: %d %s", path, res.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// ended counts the runs that reached a terminal status.
func (o *ours) ended() (int64, error) {
	var n int64
	err := o.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_runs WHERE status IN ('succeeded','failed','cancelled','timed_out')`).Scan(&n)
	return n, err
}

// runSystem: start a run over HTTP (authenticated, idempotency-keyed,
// audited, as a client would), completion seen in the database.
func (o *ours) name() string { return "ours (HTTP, FULL)" }

func (o *ours) start(ctx context.Context, id int64) error {
	return o.post(o.runsPath, fmt.Sprintf("run-%d-%d", time.Now().UnixNano(), id), map[string]any{"activation_id": o.act, "input": map[string]any{"name": "ada"}}, 201, nil)
}

// bytesInUse is the bytes of bridge.db's pages in use (SQLite dbstat).
func (o *ours) bytesInUse() (int64, error) {
	var n int64
	err := o.d.DB.Reader().QueryRow(`SELECT sum(pgsize) FROM dbstat`).Scan(&n)
	return n, err
}
