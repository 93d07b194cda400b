package platform

import (
	"embed"
	"sort"

	"github.com/agentbridge/bridge/platform/activation"
	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/compat"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/file"
	"github.com/agentbridge/bridge/platform/sim"
	"github.com/agentbridge/bridge/platform/source"
	"github.com/agentbridge/bridge/platform/steptest"
	"github.com/agentbridge/bridge/platform/trigger"
	"github.com/agentbridge/bridge/store"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrations are the platform's schema revisions under the names docs/platform-api.md
// lists (0001_boot, 0002_access, 0003_access_audit, ...) and those of its
// packages (catalog: 0004_definitions; activation: 0005_activations; engine: 0006_runs, 0010_incidents; trigger: 0011_schedules; source: 0018_provider_inbox; steptest: 0021_operations; compat: 0022_compatibility; file: 0028_files; sim: 0030_debug_sessions), in
// version order. The platform owns
// versions 1 to 99.
func Migrations() []store.Migration {
	all := store.MustLoad(migrationsFS, "migrations")
	all = append(all, catalog.Migrations()...)
	all = append(all, activation.Migrations()...)
	all = append(all, engine.Migrations()...)
	all = append(all, trigger.Migrations()...)
	all = append(all, steptest.Migrations()...)
	all = append(all, file.Migrations()...)
	all = append(all, sim.Migrations()...)
	all = append(all, source.Migrations()...)
	all = append(all, compat.Migrations()...)
	sort.Slice(all, func(i, j int) bool { return all[i].Version < all[j].Version })
	return all
}
