package daemon

import "github.com/agentbridge/bridge/store"

// Migrations collects the embedded migrations of every subsystem, which own
// their tables. Versions are global (see store.Migration).
func Migrations() []store.Migration {
	var all []store.Migration
	return all
}
