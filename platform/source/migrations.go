package source

import (
	"embed"

	"github.com/agentbridge/bridge/store"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrations are the provider source schema revisions (0018_provider_inbox).
// The platform owns versions 1 to 99; platform.Migrations includes these.
func Migrations() []store.Migration { return store.MustLoad(migrationsFS, "migrations") }
