package catalog

import (
	"embed"

	"github.com/agentbridge/bridge/store"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrations are the catalog's schema revisions (0004_definitions). The
// platform owns versions 1 to 99; platform.Migrations includes these.
func Migrations() []store.Migration { return store.MustLoad(migrationsFS, "migrations") }
