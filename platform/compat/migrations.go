package compat

import (
	"embed"

	"github.com/agentbridge/bridge/store"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrations are the compatibility schema revisions (0022_compatibility).
// The platform owns versions 1 to 99; platform.Migrations includes these.
func Migrations() []store.Migration { return store.MustLoad(migrationsFS, "migrations") }
