package steptest

import (
	"embed"

	"github.com/agentbridge/bridge/store"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrations are the schema revisions of step tests, test activations,
// test policies and compatibility verdicts (0021_operations). The
// platform owns versions 1 to 99; platform.Migrations includes these.
func Migrations() []store.Migration { return store.MustLoad(migrationsFS, "migrations") }
