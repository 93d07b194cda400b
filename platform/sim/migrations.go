package sim

import (
	"embed"

	"github.com/agentbridge/bridge/store"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrations are the simulator's schema revisions (0030_debug_sessions, 0031_studio_documents,
// ...). The platform owns versions 1 to 99; platform.Migrations includes
// these.
func Migrations() []store.Migration { return store.MustLoad(migrationsFS, "migrations") }
