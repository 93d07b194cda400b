package platform

import (
	"embed"

	"github.com/agentbridge/bridge/store"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrations are the platform's schema revisions under the names spec 2
// lists (0001_boot, 0002_access, 0003_access_audit, ...). The platform owns
// versions 1 to 99.
func Migrations() []store.Migration { return store.MustLoad(migrationsFS, "migrations") }
