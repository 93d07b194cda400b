// Package wire lists the daemon's subsystems and their migrations in one
// place. It exists apart from package daemon so that subsystems can depend on
// daemon.Deps without an import cycle.
package wire

import (
	"errors"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/bridge"
	"github.com/agentbridge/bridge/callbacks"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/ingest"
	"github.com/agentbridge/bridge/platform"
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
	return all
}

// Subsystems returns the factories of every subsystem, in start order.
func Subsystems(o BridgeOptions) []daemon.Factory {
	return []daemon.Factory{bridgeFactory(o), ingestFactory, callbacksFactory, platform.Factory(platform.Options{})}
}

// BridgeOptions lets tests point the bridge at a fake agent.
type BridgeOptions struct {
	LookPath func(string) (string, error)
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

// bridgeSub owns the bridge's event ring beside the service.
type bridgeSub struct {
	*bridge.Service
	ring *ring.Ring
}

func (b *bridgeSub) Close() error {
	return errors.Join(b.Service.Close(), b.ring.Close())
}

func bridgeFactory(o BridgeOptions) daemon.Factory {
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
		return &bridgeSub{Service: svc, ring: r}, nil
	}
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
