package ingest

import (
	"embed"

	"github.com/agentbridge/bridge/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations are the ingest tables (versions 0200-0299); the daemon applies
// them with every other subsystem's.
func Migrations() []store.Migration { return store.MustLoad(migrationFS, "migrations") }
