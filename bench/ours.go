package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/platform/platformtest"
)

// threeStep is the workflow every system runs: an echo action, a noop
// action and a final step, the one platform's BenchmarkDurableThreeStepRuns
// runs (platformtest).
const threeStep = platformtest.ThreeStepWorkflow

// ours is a real daemon (what `bridge serve` runs), in this process or in a
// child process, on loopback ports, with an operator token and an
// activated 3-step workflow.
type ours struct {
	label    string
	dir      string
	db       *sql.DB // bridge.db, for reads
	shutdown func() error
	child    *childDaemon // nil in process
	client   *http.Client
	services string
	token    string
	runsPath string
	act      string
	seq      int
	// done counts the ended runs, kept by pollEnded (the peers count
	// theirs in process, so the starters read an atomic for every system).
	done       atomic.Int64
	stopPoll   context.CancelFunc
	pollDone   chan struct{}
	pollPeriod time.Duration
	caughtUp   chan struct{}
}

// startOurs starts the daemon in this process.
func startOurs(dir string) (*ours, error) {
	d, err := startDaemon(dir)
	if err != nil {
		return nil, err
	}
	o := &ours{label: oursLabel, dir: dir, services: d.State().ServicesURL, db: d.DB.Reader(), shutdown: d.Shutdown}
	if err := o.setup(dir); err != nil {
		_ = d.Shutdown()
		return nil, err
	}
	return o, nil
}

// startOursChild starts the daemon in a child process.
func startOursChild(dir, label, profile string) (*ours, error) {
	c, err := startChild(dir, profile)
	if err != nil {
		return nil, err
	}
	o := &ours{label: label, dir: dir, services: c.services, db: c.db, shutdown: c.stop, child: c}
	if err := o.setup(dir); err != nil {
		_ = c.stop()
		return nil, err
	}
	return o, nil
}

// setup signs in and activates the 3-step workflow (or finds the
// activation a previous start of the directory made), then starts counting
// ended runs.
func (o *ours) setup(dir string) error {
	o.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, DisableCompression: true}, Timeout: time.Minute}
	owner, err := daemon.ReadOwnerToken(filepath.Join(dir, daemon.OwnerTokenFile))
	if err != nil {
		return err
	}
	if o.token, err = o.deviceToken(owner); err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	var tenant, project, env string
	if err := o.db.QueryRow(`SELECT e.tenant_id, e.project_id, e.id FROM platform_environments e LIMIT 1`).Scan(&tenant, &project, &env); err != nil {
		return fmt.Errorf("local workspace: %w", err)
	}
	p := "/api/v1/tenants/" + tenant + "/projects/" + project
	o.runsPath = p + "/environments/" + env + "/runs"
	if err := o.db.QueryRow(`SELECT a.id FROM platform_activations a JOIN platform_definition_versions v ON v.id = a.published_version_id
		WHERE v.definition_id = 'bench/three' AND a.status = 'active' LIMIT 1`).Scan(&o.act); err != nil {
		var wf struct{ ID string }
		for i, src := range []string{platformtest.GreetAction, platformtest.NothingAction, threeStep} {
			coll := "actions"
			if i == 2 {
				coll = "workflows"
			}
			if err := o.post(p+"/"+coll, fmt.Sprint("pub-", i), map[string]string{"source": src, "format": "yaml"}, 201, &wf); err != nil {
				return fmt.Errorf("publish: %w", err)
			}
		}
		var act struct{ ID string }
		if err := o.post(p+"/environments/"+env+"/activations", "act", map[string]string{"published_version_id": wf.ID}, 201, &act); err != nil {
			return fmt.Errorf("activate: %w", err)
		}
		o.act = act.ID
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.stopPoll, o.pollDone, o.pollPeriod, o.caughtUp = cancel, make(chan struct{}), 2*time.Millisecond, make(chan struct{})
	go o.pollEnded(ctx)
	<-o.caughtUp // a grown directory's runs are counted before the first window
	return nil
}

func (o *ours) close() error {
	o.stopPoll()
	<-o.pollDone
	return o.shutdown()
}

// pollEnded keeps o.done: every pollPeriod it reads the runs inserted after
// the oldest one not yet seen ended (rowid order is insertion order), so
// each read costs the runs in flight, not every run ever stored. The first
// version of the harness counted every ended run with count(*) before each
// start: a scan of the whole table per start, from 16 starters, which grew
// with the table and cost the daemon's CPU its throughput (BENCHMARKS.md).
func (o *ours) pollEnded(ctx context.Context) {
	defer close(o.pollDone)
	var low, below int64 // every run with rowid <= low has ended; below of them
	const limit = 20000
	caught := false
	for ctx.Err() == nil {
		rows, err := o.db.QueryContext(ctx, `SELECT rowid, status FROM platform_runs WHERE rowid > ? ORDER BY rowid LIMIT ?`, low, limit)
		if err == nil {
			prefix, tail, n := true, int64(0), 0
			for rows.Next() {
				n++
				var id int64
				var status string
				if rows.Scan(&id, &status) != nil {
					break
				}
				ended := status == "succeeded" || status == "failed" || status == "cancelled" || status == "timed_out"
				switch {
				case ended && prefix:
					low, below = id, below+1
				case ended:
					tail++
				default:
					prefix = false
				}
			}
			rows.Close()
			o.done.Store(below + tail)
			if !caught && n < limit {
				caught = true
				close(o.caughtUp)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(o.pollPeriod):
		}
	}
}

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

// ended counts the runs that reached a terminal status (pollEnded).
func (o *ours) ended() (int64, error) { return o.done.Load(), nil }

// endedScan is the first harness's count: every ended run, counted in
// bridge.db by each starter before each start (the "ours, count(*) per
// start" system shows what it cost).
func (o *ours) endedScan() (int64, error) {
	var n int64
	err := o.db.QueryRow(`SELECT count(*) FROM platform_runs WHERE status IN ('succeeded','failed','cancelled','timed_out')`).Scan(&n)
	return n, err
}

// runSystem: start a run over HTTP (authenticated, idempotency-keyed,
// audited, as a client would), completion seen in the database.
func (o *ours) name() string { return o.label }

func (o *ours) start(ctx context.Context, id int64) error {
	return o.post(o.runsPath, fmt.Sprintf("run-%d-%d", time.Now().UnixNano(), id), map[string]any{"activation_id": o.act, "input": map[string]any{"name": "ada"}}, 201, nil)
}

// bytesInUse is the bytes of bridge.db's pages in use (SQLite dbstat).
func (o *ours) bytesInUse() (int64, error) {
	var n int64
	err := o.db.QueryRow(`SELECT sum(pgsize) FROM dbstat`).Scan(&n)
	return n, err
}

// boltInUse is the size of events.bolt (bbolt grows the file as pages are
// used; retention frees pages for reuse without shrinking it).
func (o *ours) boltInUse() int64 { return fileSize(o.dir, "events.bolt") }
