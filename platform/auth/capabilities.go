package auth

import (
	"fmt"
	"math/bits"
	"strings"
)

// Capability is one permission of docs/platform-api.md, "Authentication" item 5.
type Capability string

// The capabilities, in the order docs/platform-api.md lists them.
const (
	CapCatalogRead        Capability = "catalog.read"
	CapCompile            Capability = "compile"
	CapDefinitionPublish  Capability = "definition.publish"
	CapDefinitionWrite    Capability = "definition.write"
	CapReleaseActivate    Capability = "release.activate"
	CapReleaseRetire      Capability = "release.retire"
	CapStatusRead         Capability = "status.read"
	CapCompatibilityCheck Capability = "compatibility.check"
	CapSimulate           Capability = "simulate"
	CapRunRead            Capability = "run.read"
	CapRunStart           Capability = "run.start"
	CapRunSignal          Capability = "run.signal"
	CapRunCancel          Capability = "run.cancel"
	CapRunRetry           Capability = "run.retry"
	CapIncidentRead       Capability = "incident.read"
	CapIncidentResolve    Capability = "incident.resolve"
	CapTriggerManage      Capability = "trigger.manage"
	CapConnectionManage   Capability = "connection.manage"
	CapConnectionBind     Capability = "connection.bind"
	CapFileManage         Capability = "file.manage"
	CapFileRead           Capability = "file.read"
	CapHumanTaskComplete  Capability = "human_task.complete"
	CapHumanTaskRead      Capability = "human_task.read"
	CapTaskClaim          Capability = "task.claim"
	CapStepTest           Capability = "step.test"
	CapGrantAdmin         Capability = "grant.admin"
	CapGrantManage        Capability = "grant.manage"
)

// AllCapabilities returns every capability in spec order (a fresh slice).
func AllCapabilities() []Capability {
	return []Capability{
		CapCatalogRead, CapCompile, CapDefinitionPublish, CapDefinitionWrite,
		CapReleaseActivate, CapReleaseRetire, CapStatusRead, CapCompatibilityCheck,
		CapSimulate, CapRunRead, CapRunStart, CapRunSignal, CapRunCancel, CapRunRetry,
		CapIncidentRead, CapIncidentResolve, CapTriggerManage, CapConnectionManage,
		CapConnectionBind, CapFileManage, CapFileRead, CapHumanTaskComplete,
		CapHumanTaskRead, CapTaskClaim, CapStepTest, CapGrantAdmin, CapGrantManage,
	}
}

// capIndex maps a capability to its bit; the switch keeps it allocation
// free and avoids a package-level lookup table.
func capIndex(c Capability) (uint, bool) {
	switch c {
	case CapCatalogRead:
		return 0, true
	case CapCompile:
		return 1, true
	case CapDefinitionPublish:
		return 2, true
	case CapDefinitionWrite:
		return 3, true
	case CapReleaseActivate:
		return 4, true
	case CapReleaseRetire:
		return 5, true
	case CapStatusRead:
		return 6, true
	case CapCompatibilityCheck:
		return 7, true
	case CapSimulate:
		return 8, true
	case CapRunRead:
		return 9, true
	case CapRunStart:
		return 10, true
	case CapRunSignal:
		return 11, true
	case CapRunCancel:
		return 12, true
	case CapRunRetry:
		return 13, true
	case CapIncidentRead:
		return 14, true
	case CapIncidentResolve:
		return 15, true
	case CapTriggerManage:
		return 16, true
	case CapConnectionManage:
		return 17, true
	case CapConnectionBind:
		return 18, true
	case CapFileManage:
		return 19, true
	case CapFileRead:
		return 20, true
	case CapHumanTaskComplete:
		return 21, true
	case CapHumanTaskRead:
		return 22, true
	case CapTaskClaim:
		return 23, true
	case CapStepTest:
		return 24, true
	case CapGrantAdmin:
		return 25, true
	case CapGrantManage:
		return 26, true
	}
	return 0, false
}

// Valid reports whether c is one of the spec's capabilities.
func (c Capability) Valid() bool {
	_, ok := capIndex(c)
	return ok
}

// CapabilitySet is a set of capabilities (a bit set; the zero value is empty).
type CapabilitySet uint64

// NewCapabilitySet builds a set; unknown capabilities are reported.
func NewCapabilitySet(caps ...Capability) (CapabilitySet, error) {
	var s CapabilitySet
	for _, c := range caps {
		i, ok := capIndex(c)
		if !ok {
			return 0, fmt.Errorf("auth: unknown capability %q", c)
		}
		s |= 1 << i
	}
	return s, nil
}

// Has reports whether c is in s.
func (s CapabilitySet) Has(c Capability) bool {
	i, ok := capIndex(c)
	return ok && s&(1<<i) != 0
}

// ContainsAll reports whether every capability of o is in s.
func (s CapabilitySet) ContainsAll(o CapabilitySet) bool { return o&^s == 0 }

// Len is the number of capabilities in s.
func (s CapabilitySet) Len() int { return bits.OnesCount64(uint64(s)) }

// List returns the capabilities of s in spec order.
func (s CapabilitySet) List() []Capability {
	out := make([]Capability, 0, s.Len())
	for _, c := range AllCapabilities() {
		if s.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

func (s CapabilitySet) String() string {
	names := make([]string, 0, s.Len())
	for _, c := range s.List() {
		names = append(names, string(c))
	}
	return "{" + strings.Join(names, ", ") + "}"
}

func setOf(caps ...Capability) CapabilitySet {
	var s CapabilitySet
	for _, c := range caps {
		if i, ok := capIndex(c); ok {
			s |= 1 << i
		}
	}
	return s
}

// Role is a named capability bundle.
type Role string

// Roles. docs/platform-api.md names viewer, developer, deployer, operator and tenant
// administrator; platform_admin and worker cover platform administration and
// worker principals.
const (
	RoleViewer        Role = "viewer"
	RoleDeveloper     Role = "developer"
	RoleDeployer      Role = "deployer"
	RoleOperator      Role = "operator"
	RoleTenantAdmin   Role = "tenant_admin"
	RolePlatformAdmin Role = "platform_admin"
	RoleWorker        Role = "worker"
)

// RoleDefinition describes one role: the roles it includes and the
// capabilities it adds on top of them.
type RoleDefinition struct {
	Role     Role
	Summary  string
	Includes []Role
	Adds     []Capability
}

// RoleDefinitions is the role-to-capability map, written as data. A role
// may include only roles listed before it, so the map has no cycles.
// ROLES.md is generated from it (see RolesMarkdown).
//
// Design: authoring (developer → deployer) and run operations (operator)
// are separate branches on top of viewer, so an on-call operator cannot
// publish or activate code and a developer cannot resolve incidents or
// start production runs; tenant_admin is their union plus connection
// management and delegation. platform_admin holds only grant.admin (no
// business capability at all) and worker only task.claim, which also
// covers the task file routes.
func RoleDefinitions() []RoleDefinition {
	return []RoleDefinition{
		{
			Role:    RoleViewer,
			Summary: "reads catalog, status, runs and run history",
			Adds:    []Capability{CapCatalogRead, CapStatusRead, CapRunRead},
		},
		{
			Role:     RoleDeveloper,
			Summary:  "authors, compiles, publishes and simulates definitions; runs step tests",
			Includes: []Role{RoleViewer},
			Adds:     []Capability{CapCompile, CapDefinitionWrite, CapDefinitionPublish, CapSimulate, CapStepTest},
		},
		{
			Role:     RoleDeployer,
			Summary:  "activates and retires releases, manages triggers, binds connections",
			Includes: []Role{RoleDeveloper},
			Adds: []Capability{CapCompatibilityCheck, CapReleaseActivate, CapReleaseRetire,
				CapTriggerManage, CapConnectionBind},
		},
		{
			Role:     RoleOperator,
			Summary:  "operates runs: starts, signals, cancels, retries; handles incidents, human tasks and files",
			Includes: []Role{RoleViewer},
			Adds: []Capability{CapIncidentRead, CapIncidentResolve, CapRunStart, CapRunSignal,
				CapRunCancel, CapRunRetry, CapHumanTaskRead, CapHumanTaskComplete,
				CapFileRead, CapFileManage},
		},
		{
			Role:     RoleTenantAdmin,
			Summary:  "everything of deployer and operator, plus connection management and delegation",
			Includes: []Role{RoleDeployer, RoleOperator},
			Adds:     []Capability{CapConnectionManage, CapGrantManage},
		},
		{
			Role:    RolePlatformAdmin,
			Summary: "provisions tenants and bootstraps tenant administrators; no business access",
			Adds:    []Capability{CapGrantAdmin},
		},
		{
			Role:    RoleWorker,
			Summary: "claims tasks and uses task files through the API",
			Adds:    []Capability{CapTaskClaim},
		},
	}
}

// compiledRoles is the resolved role map. It is computed once from
// RoleDefinitions and never written afterwards.
var compiledRoles = compileRoles(RoleDefinitions())

func compileRoles(defs []RoleDefinition) map[Role]CapabilitySet {
	out := make(map[Role]CapabilitySet, len(defs))
	for _, d := range defs {
		s := setOf(d.Adds...)
		for _, inc := range d.Includes {
			s |= out[inc] // only earlier roles resolve; tests check none is missing
		}
		out[d.Role] = s
	}
	return out
}

// RoleCapabilities returns the full capability set of r.
func RoleCapabilities(r Role) (CapabilitySet, bool) {
	s, ok := compiledRoles[r]
	return s, ok
}

// AllRoles lists the roles in definition order.
func AllRoles() []Role {
	defs := RoleDefinitions()
	out := make([]Role, len(defs))
	for i, d := range defs {
		out[i] = d.Role
	}
	return out
}

// Capability classes used by the grant rules, as constants (bit 25 is
// grant.admin, bit 23 task.claim; a test pins them to capIndex).
const (
	// platformCaps may only be held at the platform (root) scope.
	platformCaps CapabilitySet = 1 << 25
	// workerCaps is everything a worker principal can ever hold.
	workerCaps CapabilitySet = 1 << 23
	// allCaps is every capability of the spec.
	allCaps CapabilitySet = 1<<27 - 1
	// businessCaps is everything except platform administration.
	businessCaps = allCaps &^ platformCaps
)

// RolesMarkdown renders the role map as the ROLES.md document.
func RolesMarkdown() string {
	var b strings.Builder
	defs := RoleDefinitions()
	b.WriteString("# Platform roles and capabilities\n\n")
	b.WriteString("<!-- Generated from RoleDefinitions in capabilities.go; do not edit.\n")
	b.WriteString("     Regenerate: go test ./platform/auth -run TestRolesDoc -update-roles -->\n\n")
	b.WriteString("Roles are named capability bundles. A grant gives a principal a role and/or explicit\n")
	b.WriteString("capabilities at a scope (tenant, project, environment or resource); it applies to that\n")
	b.WriteString("scope and everything inside it.\n\n")
	b.WriteString("## Roles\n\n")
	b.WriteString("| Role | Includes | Adds | Summary |\n|---|---|---|---|\n")
	for _, d := range defs {
		inc := make([]string, len(d.Includes))
		for i, r := range d.Includes {
			inc[i] = "`" + string(r) + "`"
		}
		adds := make([]string, len(d.Adds))
		for i, c := range setOf(d.Adds...).List() {
			adds[i] = "`" + string(c) + "`"
		}
		incs := strings.Join(inc, ", ")
		if incs == "" {
			incs = "—"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Role, incs, strings.Join(adds, ", "), d.Summary)
	}
	b.WriteString("\n## Full role to capability map\n\n")
	b.WriteString("| Capability |")
	for _, d := range defs {
		fmt.Fprintf(&b, " `%s` |", d.Role)
	}
	b.WriteString("\n|---|")
	for range defs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, c := range AllCapabilities() {
		fmt.Fprintf(&b, "| `%s` |", c)
		for _, d := range defs {
			s, _ := RoleCapabilities(d.Role)
			if s.Has(c) {
				b.WriteString(" ✓ |")
			} else {
				b.WriteString("   |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Rules\n\n")
	b.WriteString("- Only an unrevoked grant of the requesting principal whose scope contains the target and\n")
	b.WriteString("  whose capabilities include the requested one allows a request. A disabled principal is\n")
	b.WriteString("  always denied.\n")
	b.WriteString("- `grant.admin` exists only at the platform (root) scope, and a root-scope grant carries no\n")
	b.WriteString("  business capability: platform administration grants no business access.\n")
	b.WriteString("- Worker principals can only ever hold `task.claim`; any other capability (authoring,\n")
	b.WriteString("  release, grant, ...) is refused when granted and ignored when found on a stored grant.\n")
	b.WriteString("- Delegation: the grantor needs `grant.manage` at a scope containing the new grant's scope\n")
	b.WriteString("  and must itself hold every delegated capability there. Platform-level grants need\n")
	b.WriteString("  `grant.admin`. Two narrow exceptions: worker provisioning (`grant.manage` suffices to give\n")
	b.WriteString("  the `worker` role to a worker principal, since no human role holds `task.claim`), and\n")
	b.WriteString("  tenant bootstrap (a holder of `grant.admin` may give another principal, never itself,\n")
	b.WriteString("  the `tenant_admin` role on exactly one whole tenant).\n")
	return b.String()
}
