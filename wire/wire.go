// Package wire lists the daemon's subsystems and their migrations in one
// place. It exists apart from package daemon so that subsystems can depend on
// daemon.Deps without an import cycle.
package wire

import (
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/store"
)

// Migrations collects the embedded migrations of every subsystem, which own
// their tables. Versions are global (see store.Migration).
func Migrations() []store.Migration {
	var all []store.Migration
	return all
}

// Subsystems returns the factories of every subsystem, in start order.
func Subsystems() []daemon.Factory {
	return nil
}

// Options completes daemon options with the subsystems and migrations.
func Options(o daemon.Options) daemon.Options {
	o.Migrations = Migrations()
	o.Subsystems = Subsystems()
	return o
}
