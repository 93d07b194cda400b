package trigger

import (
	"embed"

	"github.com/agentbridge/bridge/store"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrations are the trigger schema revisions (0011_schedules, 0015_triggers). The
// platform owns versions 1 to 99; platform.Migrations includes these.
func Migrations() []store.Migration { return store.MustLoad(migrationsFS, "migrations") }
