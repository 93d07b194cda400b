// Package wire lists the daemon's subsystems and their migrations in one
// place. It exists apart from package daemon so that subsystems can depend on
// daemon.Deps without an import cycle.
package wire

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/bridge"
	"github.com/agentbridge/bridge/bridge/console"
	bridgemcp "github.com/agentbridge/bridge/bridge/mcp"
	"github.com/agentbridge/bridge/callbacks"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/factory"
	"github.com/agentbridge/bridge/httpx/docsui"
	"github.com/agentbridge/bridge/ingest"
	"github.com/agentbridge/bridge/platform"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/ring"
)

// Migrations collects the embedded migrations of every subsystem, which own
// their tables. Versions are global (see store.Migration).
func Migrations() []store.Migration {
	var all []store.Migration
	all = append(all, bridge.Migrations()...)
	all = append(all, platform.Migrations()...)
	all = append(all, ingest.Migrations()...)
	all = append(all, callbacks.Migrations()...)
	all = append(all, factory.Migrations()...)
	return all
}

// Subsystems returns the factories of every subsystem, in start order. The
// bridge is built first and the platform last; the platform's factory then
// links the two (see link).
func Subsystems(o BridgeOptions) []daemon.Factory {
	l := &link{}
	var readers factory.Readers
	if !o.WithoutPlatform {
		l.readers = &factoryReaders{}
		readers = l.readers
	}
	subs := []daemon.Factory{l.bridgeFactory(o), ingestFactory, callbacksFactory, factoryFactory(o, readers), l.consoleFactory}
	if !o.WithoutPlatform {
		subs = append(subs, l.platformFactory(platform.Options{}))
	}
	return subs
}

// BridgeOptions lets tests point the bridge at a fake agent.
type BridgeOptions struct {
	LookPath func(string) (string, error)
	// Built, when set, is handed the bridge service once it is built.
	Built func(*bridge.Service)
	// WithoutPlatform leaves the platform subsystem out: the bridge's
	// workflow-run routes answer 503 workflows_unavailable.
	WithoutPlatform bool
}

// Options completes daemon options with the subsystems and migrations.
func Options(o daemon.Options) daemon.Options {
	return OptionsWith(o, BridgeOptions{})
}

// OptionsWith is Options with bridge settings for tests.
func OptionsWith(o daemon.Options, b BridgeOptions) daemon.Options {
	o.Migrations = Migrations()
	o.Subsystems = Subsystems(b)
	return o
}

// bridgeSub owns the bridge's event ring and workflow-run routes beside the
// service.
type bridgeSub struct {
	*bridge.Service
	ring       *ring.Ring
	runs       *bridge.WorkflowRuns
	bridgeAddr string
	mcp        bridgemcp.Options
}

// Routes adds the workflow-run routes to the bridge's own; until the
// platform is linked they answer 503. The services listener gets a public
// copy of the bridge's OpenAPI document for the API documentation UI
// (httpx/docsui): the bridge listener's own needs a token, and the UI only
// reads its own origin.
func (b *bridgeSub) Routes(br, services *httprouter.Router) {
	b.Service.Routes(br, services)
	b.runs.Routes(br)
	// The MCP endpoint reaches the bridge API through the same router, in
	// process (docs/mcp.md).
	b.MountMCP(br, bridgemcp.Path, bridgemcp.Handler(br, b.mcp))
	doc := docsui.JSON(b.servicesDoc)
	services.Handler(http.MethodGet, docsui.BridgeDocURL, doc)
	services.Handler(http.MethodHead, docsui.BridgeDocURL, doc)
}

// servicesDoc is the bridge's document naming the bridge listener's actual
// address as its server.
func (b *bridgeSub) servicesDoc() ([]byte, error) {
	data, err := b.OpenAPIJSON()
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("bridge OpenAPI document: %w", err)
	}
	doc["servers"] = []any{map[string]any{"url": "http://" + b.bridgeAddr,
		"description": "the bridge listener: every operation needs a bridge token (Authorization: Bearer brg_...)"}}
	return json.Marshal(doc)
}

func (b *bridgeSub) Close() error {
	b.runs.Bind(nil)
	return errors.Join(b.Service.Close(), b.ring.Close())
}

// mcpOptions tells the MCP endpoint the daemon's version and addresses:
// bridge_status reports the actual bridge address beside the configured
// port (docs/bridge-api.md's panel tool).
func mcpOptions(d daemon.Deps) bridgemcp.Options {
	cfg := daemon.DefaultConfig()
	if d.Config != nil {
		_ = d.Config.Decode("listen", &cfg.Listen) // the daemon already validated it
	}
	addr := bridgemcp.Addresses{BridgeURL: "http://" + d.BridgeAddr, ServicesURL: "http://" + d.ServicesAddr, ConfiguredBridgePort: cfg.Listen.BridgePort}
	return bridgemcp.Options{
		Version:   d.Build.Version,
		Addresses: func(context.Context) bridgemcp.Addresses { return addr },
		Logger:    d.Logger.With("subsystem", "mcp"),
	}
}

// link connects the bridge and the platform once both are built (the
// bridge's factory runs first): the bridge's workflow runs start and read
// platform runs, and the platform's agent steps run as bridge jobs.
type link struct {
	bridge  *bridgeSub
	readers *factoryReaders // the factory's platform principals
}

func (l *link) bridgeFactory(o BridgeOptions) daemon.Factory {
	return func(d daemon.Deps) (daemon.Subsystem, error) {
		r, err := ring.Open(d.Bolt, "bridge", d.EventsCapacity)
		if err != nil {
			return nil, err
		}
		svc, err := bridge.New(d, bridge.Options{Ring: r, LookPath: o.LookPath})
		if err != nil {
			r.Close()
			return nil, err
		}
		l.bridge = &bridgeSub{Service: svc, ring: r, runs: svc.WorkflowRuns(), bridgeAddr: d.BridgeAddr, mcp: mcpOptions(d)}
		if o.Built != nil {
			o.Built(svc)
		}
		return l.bridge, nil
	}
}

func (l *link) platformFactory(o platform.Options) daemon.Factory {
	return func(d daemon.Deps) (daemon.Subsystem, error) {
		p, err := platform.New(context.Background(), d, o)
		if err != nil {
			return nil, err
		}
		if l.readers != nil {
			l.readers.platform.Store(p)
		}
		if b := l.bridge; b != nil {
			b.runs.Bind(platformRuns{p})
			p.SetAgents(b.WorkflowAgents(p.CheckAgentOutput).WithTools(p))
		}
		return p, nil
	}
}

// platformRuns adapts the platform's local runs to bridge.WorkflowRunner.
type platformRuns struct{ p *platform.Service }

func (r platformRuns) StartWorkflowRun(ctx context.Context, st bridge.WorkflowStart) (bridge.PlatformRun, error) {
	// Inputs are strings (docs/bridge-api.md): typed properties are parsed as JSON.
	ws := platform.WorkflowStart{Workflow: st.TemplateID, Input: st.Inputs, StringInputs: true}
	if st.Record != nil {
		ws.Commit = func(tx *sql.Tx, run platform.LocalRun) error { return st.Record(tx, bridgeRun(run)) }
	}
	run, err := r.p.StartLocalRun(ctx, ws)
	if err != nil {
		return bridge.PlatformRun{}, bridgeError(err)
	}
	return bridgeRun(run), nil
}

func (r platformRuns) WorkflowRun(ctx context.Context, id string) (bridge.PlatformRun, error) {
	run, err := r.p.LocalRun(ctx, id)
	if err != nil {
		return bridge.PlatformRun{}, bridgeError(err)
	}
	return bridgeRun(run), nil
}

func bridgeRun(r platform.LocalRun) bridge.PlatformRun {
	out := bridge.PlatformRun{ID: r.ID, Status: r.Status, Workflow: r.Workflow, Input: r.Input, Output: r.Output,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Path: r.Path}
	if r.Workflow != "" {
		out.Workflow = r.Workflow + "@" + strconv.Itoa(r.Version)
	}
	if r.ErrorCode != "" {
		out.Error = &bridge.WorkflowRunError{Code: r.ErrorCode, Message: r.ErrorMessage}
	}
	return out
}

// bridgeError maps the platform's refusals to the bridge's error codes by
// their type (engine.StartRefusal, the run-not-found sentinel); other
// errors (the bridge's own from Record among them) pass.
func bridgeError(err error) error {
	var refusal *engine.StartRefusal
	if errors.As(err, &refusal) {
		for _, m := range []struct {
			kind error
			code string
		}{
			{platform.ErrWorkflowNotPublished, bridge.CodeUnknownTemplate},
			{platform.ErrNoActiveActivation, bridge.CodeTemplateNotActive},
			{platform.ErrInvalidInput, bridge.CodeInvalidInputs},
		} {
			if errors.Is(refusal.Kind, m.kind) {
				return &bridge.Error{Code: m.code, Message: refusal.Detail}
			}
		}
	}
	if errors.Is(err, platform.ErrRunNotFound) {
		return errors.Join(bridge.ErrPlatformRunNotFound, err)
	}
	return err
}

// consoleFactory builds the web console (bridge/console). It acts with the
// owner token, which it reads from the data directory like the CLI does.
func (l *link) consoleFactory(d daemon.Deps) (daemon.Subsystem, error) {
	owner, err := daemon.ReadOwnerToken(filepath.Join(d.DataDir, daemon.OwnerTokenFile))
	if err != nil {
		return nil, err
	}
	c, err := console.New(console.Options{OwnerToken: owner, IsOwner: d.IsOwner, BridgeURL: "http://" + d.BridgeAddr,
		ServicesURL: "http://" + d.ServicesAddr, DataDir: d.DataDir, Version: d.Build.Version, Logger: d.Logger})
	if err != nil {
		return nil, err
	}
	if l.bridge != nil {
		l.bridge.OnOwnerRevoke(c.EndSessions)
	}
	return c, nil
}

// servicesOnly adapts a subsystem that serves only the services listener.
type servicesOnly struct {
	daemon.Service
	routes func(*httprouter.Router)
}

func (s servicesOnly) Routes(_, services *httprouter.Router) { s.routes(services) }

func ingestFactory(d daemon.Deps) (daemon.Subsystem, error) {
	svc, err := ingest.New(d)
	if err != nil {
		return nil, err
	}
	return servicesOnly{Service: svc, routes: svc.Routes}, nil
}

func callbacksFactory(d daemon.Deps) (daemon.Subsystem, error) {
	svc, err := callbacks.New(d, d.Box)
	if err != nil {
		return nil, err
	}
	return servicesOnly{Service: svc, routes: svc.Routes}, nil
}

// factoryFactory builds the factory, which runs coding agents through the
// bridge's provider interface (the bridge's profiles, same LookPath);
// readers admits platform principals to its read routes.
func factoryFactory(o BridgeOptions, readers factory.Readers) daemon.Factory {
	return func(d daemon.Deps) (daemon.Subsystem, error) {
		svc, err := factory.New(d, factory.Options{LookPath: o.LookPath, Readers: readers})
		if err != nil {
			return nil, err
		}
		return servicesOnly{Service: svc, routes: svc.Routes}, nil
	}
}
