package source

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/source/provider"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/secretbox"
)

// fakeRuns starts runs and delivers signals in the store's transaction
// (so the receipt commits with them) or refuses with the queued errors.
type fakeRuns struct {
	db      *store.DB
	mu      sync.Mutex
	refuse  []error
	started []string
	inputs  []string
	signals []string
	// hang makes a start of this input block until its context ends.
	hang string
}

func (f *fakeRuns) next() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.refuse) == 0 {
		return nil
	}
	err := f.refuse[0]
	f.refuse = f.refuse[1:]
	return err
}

func (f *fakeRuns) StartActivation(ctx context.Context, st engine.LocalStart) (engine.RunInfo, error) {
	if f.hang != "" && string(st.Input) == f.hang {
		<-ctx.Done()
		return engine.RunInfo{}, ctx.Err()
	}
	if err := f.next(); err != nil {
		return engine.RunInfo{}, err
	}
	var info engine.RunInfo
	f.mu.Lock()
	info.ID = fmt.Sprintf("run-%d", len(f.started)+1)
	f.mu.Unlock()
	err := f.db.Write(ctx, func(tx *sql.Tx) error { return st.Commit(tx, info) })
	if err == nil {
		f.mu.Lock()
		f.started = append(f.started, info.ID)
		f.inputs = append(f.inputs, string(st.Input))
		f.mu.Unlock()
	}
	return info, err
}

func (f *fakeRuns) InputSchema(context.Context, auth.Scope, string) (json.RawMessage, error) {
	return json.RawMessage(`null`), nil
}

func (f *fakeRuns) SignalSchemas(context.Context, auth.Scope, string, string) ([]json.RawMessage, error) {
	return []json.RawMessage{json.RawMessage(`null`)}, nil
}

func (f *fakeRuns) SignalLocal(ctx context.Context, _ auth.Scope, run, name, id string, payload json.RawMessage, commit func(*sql.Tx) error) (int64, error) {
	if err := f.next(); err != nil {
		return 0, err
	}
	err := f.db.Write(ctx, commit)
	if err == nil {
		f.mu.Lock()
		f.signals = append(f.signals, run+"/"+name+"/"+string(payload))
		f.mu.Unlock()
	}
	return 1, err
}

func (f *fakeRuns) Notify() {}

type fixture struct {
	s       *Service
	runs    *fakeRuns
	now     *time.Time
	allowed *bool
	n       int
}

// newFixture is a Service on a store with the scope tables stubbed, a
// fake engine, a settable clock and a settable standing answer.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	stub := store.Migration{Version: 1, Name: "0001_stub", SQL: `
		CREATE TABLE platform_tenants (id TEXT PRIMARY KEY);
		CREATE TABLE platform_projects (id TEXT PRIMARY KEY);
		CREATE TABLE platform_environments (id TEXT PRIMARY KEY, project_id TEXT, tenant_id TEXT);
		INSERT INTO platform_tenants VALUES ('t'); INSERT INTO platform_projects VALUES ('p');
		INSERT INTO platform_environments VALUES ('e', 'p', 't'), ('e2', 'p', 't');`}
	db, err := store.Open(context.Background(), filepath.Join(dir, "t.db"), append([]store.Migration{stub}, Migrations()...), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	box, err := secretbox.Open(context.Background(), dir, secretbox.Options{DisableKeyring: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{runs: &fakeRuns{db: db}, now: new(time.Time), allowed: new(bool)}
	*f.now = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	*f.allowed = true
	standing := func(context.Context, string, auth.Capability, auth.Scope) (auth.Decision, error) {
		return auth.Decision{Allowed: *f.allowed}, nil
	}
	if f.s, err = New(Options{DB: db, Box: box, Runs: f.runs, Standing: standing, Now: func() time.Time { return *f.now }}); err != nil {
		t.Fatal(err)
	}
	return f
}

// source stores a slack source of kind in env with mapping.
func (f *fixture) source(t *testing.T, env, kind, mapping string) Source {
	t.Helper()
	ctx := context.Background()
	p := f.s.packages.ForProvider("slack")
	f.n++
	id := fmt.Sprintf("src-%d", f.n)
	conn := connectionRow{Connection: Connection{ID: "conn-" + id, ConnectionID: "c-" + id, Revision: 1, Name: "c", Provider: "slack",
		Config: map[string]string{}, SecretKeys: []string{"signing_secret"}, PrincipalID: "owner", CreatedAt: *f.now},
		Tenant: "t", Project: "p", Environment: env}
	var err error
	if conn.sealed, err = f.s.sealSecrets(conn.ID, map[string]string{"signing_secret": "x"}); err != nil {
		t.Fatal(err)
	}
	src := Source{ID: id, Name: id, Provider: "slack", Package: p.Name, PackageVersion: p.Version, AdapterVersion: p.AdapterVersion,
		SchemaDigest: p.SchemaDigest, ConnectionRevisionID: conn.ID, Policy: map[string]string{}, Kind: kind, Mapping: mapping,
		Scope: Scope{TenantID: "t", ProjectID: "p", EnvironmentID: env}, BindingID: "b-" + id, PrincipalID: "owner", CreatedAt: *f.now}
	target := "a1"
	if kind == KindRun {
		src.ActivationID = &target
	} else {
		sig := "chat.reply"
		src.RunID, src.Signal = &target, &sig
	}
	err = f.s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := insertConnection(ctx, tx, conn); err != nil {
			return err
		}
		return insertSource(ctx, tx, src)
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// event admits one event of kind for src.
func (f *fixture) event(t *testing.T, src Source, kind, id, text string) string {
	t.Helper()
	payload := fmt.Sprintf(`{"team_id":"T1","channel":"C1","user":"U1","text":%q,"ts":"1.2","event_time":1}`, text)
	ack, err := f.s.admit(context.Background(), src, []provider.Event{{Kind: kind, ID: id, AccountID: "T1", Payload: json.RawMessage(payload)}})
	if err != nil {
		t.Fatal(err)
	}
	return ack.Events[0].ReceiptID
}

func (f *fixture) receipt(t *testing.T, id string) Receipt {
	t.Helper()
	r, err := getReceipt(context.Background(), f.s.db.Reader(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.Receipt
}

// The state table: dispatched with the mapped input, ignored, blocked
// (authority lost, binding revoked), failed (schema, target finished),
// transient with its 30 second cooldown; retry keeps the identity.
func TestDispatchStates(t *testing.T) {
	is := is.New(t)
	f := newFixture(t)
	ctx := context.Background()
	run := f.source(t, "e", KindRun, `{"name": input.event.text, "from": input.event_id}`)

	ok := f.event(t, run, "message", "Ev1", "hello")
	ign := f.event(t, run, "unsupported", "Ev2", "x")
	_, err := f.s.DueReceipts(ctx)
	is.NoErr(err)
	r := f.receipt(t, ok)
	is.Equal(r.Status, StatusDispatched)
	is.Equal(*r.RunID, "run-1")
	is.Equal(r.Attempts, 1)
	is.Equal(f.runs.inputs, []string{`{"from":"Ev1","name":"hello"}`})
	r = f.receipt(t, ign)
	is.Equal(r.Status, StatusIgnored)
	is.Equal(*r.Reason, ReasonUnsupported)

	// Transient (capacity): pending, reason, due 30 s later; not before.
	tr := f.event(t, run, "message", "Ev3", "later")
	f.runs.refuse = []error{&api.Error{Code: "PF-OPERATION-CAPACITY"}}
	_, err = f.s.DueReceipts(ctx)
	is.NoErr(err)
	r = f.receipt(t, tr)
	is.Equal(r.Status, StatusPending)
	is.Equal(*r.Reason, ReasonTransient)
	is.Equal(*r.NextAttemptAt, f.now.Add(Cooldown))
	*f.now = f.now.Add(Cooldown - time.Millisecond)
	_, err = f.s.DueReceipts(ctx)
	is.NoErr(err)
	is.Equal(f.receipt(t, tr).Status, StatusPending)
	*f.now = f.now.Add(time.Millisecond)
	_, err = f.s.DueReceipts(ctx)
	is.NoErr(err)
	r = f.receipt(t, tr)
	is.Equal(r.Status, StatusDispatched)
	is.Equal(r.Attempts, 2)

	// Schema failure and a retired activation: failed.
	sf := f.event(t, run, "message", "Ev4", "bad")
	f.runs.refuse = []error{api.Invalid("/input", "no")}
	_, _ = f.s.DueReceipts(ctx)
	is.Equal(*f.receipt(t, sf).Reason, ReasonSchema)
	is.Equal(f.receipt(t, sf).Status, StatusFailed)

	// Owner lost authority: blocked; the retry re-checks it.
	bl := f.event(t, run, "message", "Ev5", "blocked")
	*f.allowed = false
	_, _ = f.s.DueReceipts(ctx)
	r = f.receipt(t, bl)
	is.Equal(r.Status, StatusBlocked)
	is.Equal(*r.Reason, ReasonAuthorityLost)
	*f.allowed = true
	is.NoErr(f.s.db.Write(ctx, func(tx *sql.Tx) error {
		ok, err := requeue(ctx, tx, bl, f.s.timestamp())
		is.True(ok)
		return err
	}))
	_, _ = f.s.DueReceipts(ctx)
	r = f.receipt(t, bl)
	is.Equal(r.Status, StatusDispatched)
	is.Equal(r.EventID, "Ev5")

	// Signal sources: the run ended: failed; disabled: blocked.
	sig := f.source(t, "e", KindSignal, "")
	fin := f.event(t, sig, "message", "Ev6", "reply")
	f.runs.refuse = []error{engine.ErrRunEnded}
	_, _ = f.s.DueReceipts(ctx)
	is.Equal(*f.receipt(t, fin).Reason, ReasonTargetFinished)
	okSig := f.event(t, sig, "app_mention", "Ev7", "yo")
	_, _ = f.s.DueReceipts(ctx)
	r = f.receipt(t, okSig)
	is.Equal(r.Status, StatusDispatched)
	is.True(r.SignalID != nil)
	is.Equal(len(f.runs.signals), 1)
	dis := f.event(t, sig, "message", "Ev8", "after")
	is.NoErr(f.s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := disableSource(ctx, tx, sig.ID, "owner", *f.now)
		return err
	}))
	_, _ = f.s.DueReceipts(ctx)
	is.Equal(*f.receipt(t, dis).Reason, ReasonBindingRevoked)
	is.Equal(f.receipt(t, dis).Status, StatusBlocked)
}

// A dispatch that outlives its deadline is cut off: its receipt is
// pending with reason transient_failure, due after the cooldown (spec:
// a transient failure), and the turn's other dispatches, in its
// environment and the next, are not held up beyond the deadline.
func TestDispatchDeadline(t *testing.T) {
	is := is.New(t)
	f := newFixture(t)
	ctx := context.Background()
	is.Equal(f.s.deadline, DispatchDeadline) // the documented bound by default
	f.s.deadline = 100 * time.Millisecond
	a, b := f.source(t, "e", KindRun, `{"name": input.event.text}`), f.source(t, "e2", KindRun, `{"name": input.event.text}`)
	f.runs.hang = `{"name":"stuck"}`
	stuck := f.event(t, a, "message", "Ev1", "stuck")
	same := f.event(t, a, "message", "Ev2", "same env")
	other := f.event(t, b, "message", "Ev3", "other env")

	began := time.Now()
	_, err := f.s.DueReceipts(ctx)
	is.NoErr(err)
	// One deadline per environment at most, not a hang (the stuck call never
	// returns by itself); 5 s leaves room for a loaded -race run.
	is.True(time.Since(began) < 5*time.Second)
	r := f.receipt(t, stuck)
	is.Equal(r.Status, StatusPending)
	is.Equal(*r.Reason, ReasonTransient)
	is.Equal(r.Attempts, 1)
	is.Equal(*r.NextAttemptAt, f.now.Add(Cooldown))
	is.Equal(f.receipt(t, same).Status, StatusDispatched)
	is.Equal(f.receipt(t, other).Status, StatusDispatched)

	// Not retried during the cooldown; dispatched after it once the
	// engine answers.
	_, err = f.s.DueReceipts(ctx)
	is.NoErr(err)
	is.Equal(f.receipt(t, stuck).Attempts, 1)
	f.runs.hang = ""
	*f.now = f.now.Add(Cooldown)
	_, err = f.s.DueReceipts(ctx)
	is.NoErr(err)
	r = f.receipt(t, stuck)
	is.Equal(r.Status, StatusDispatched)
	is.Equal(r.Attempts, 2)
}

// At most DueBatch receipts per environment per turn, every environment
// served; a receipt is dispatched once however many turns look at it.
func TestDispatchBatchPerEnvironment(t *testing.T) {
	is := is.New(t)
	f := newFixture(t)
	ctx := context.Background()
	a, b := f.source(t, "e", KindRun, ""), f.source(t, "e2", KindRun, "")
	for i := range 12 {
		f.event(t, a, "message", fmt.Sprintf("A%d", i), "x")
	}
	f.event(t, b, "message", "B0", "x")
	full, err := f.s.DueReceipts(ctx)
	is.NoErr(err)
	is.True(full)
	is.Equal(len(f.runs.started), DueBatch+1)
	full, err = f.s.DueReceipts(ctx)
	is.NoErr(err)
	is.True(!full)
	is.Equal(len(f.runs.started), 13)
	_, _ = f.s.DueReceipts(ctx)
	is.Equal(len(f.runs.started), 13)
}

// A conflicting identity refuses the whole batch; a retry of the same
// payload is a duplicate.
func TestAdmitConflict(t *testing.T) {
	is := is.New(t)
	f := newFixture(t)
	ctx := context.Background()
	src := f.source(t, "e", KindRun, "")
	first := f.event(t, src, "message", "Ev1", "hello")
	ack, err := f.s.admit(ctx, src, []provider.Event{{Kind: "message", ID: "Ev1", Payload: json.RawMessage(`{"team_id":"T1","channel":"C1","user":"U1","text":"hello","ts":"1.2","event_time":1}`)}})
	is.NoErr(err)
	is.Equal(ack.Events[0].Duplicate, true)
	is.Equal(ack.Events[0].ReceiptID, first)
	_, err = f.s.admit(ctx, src, []provider.Event{
		{Kind: "message", ID: "Ev9", Payload: json.RawMessage(`{}`)},
		{Kind: "message", ID: "Ev1", Payload: json.RawMessage(`{"changed":true}`)}})
	var ae *api.Error
	is.True(err != nil)
	is.True(asAPI(err, &ae))
	is.Equal(ae.Code, CodeProviderConflict)
	_, err = receiptByIdentity(ctx, f.s.db.Reader(), src.ID, "message", "Ev9")
	is.Equal(err, errNotFound) // nothing of the batch stored
}

func asAPI(err error, target **api.Error) bool {
	e, ok := err.(*api.Error)
	if ok {
		*target = e
	}
	return ok
}
