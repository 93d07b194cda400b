package auth

import (
	"errors"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/matryer/is"
)

var updateRoles = flag.Bool("update-roles", false, "rewrite ROLES.md from RoleDefinitions")

const (
	tenantA = "0b6f5c1e-5d7a-4a86-9a51-1f1e3b0c0a01"
	tenantB = "0b6f5c1e-5d7a-4a86-9a51-1f1e3b0c0b02"
	projA1  = "1c7a6d2f-6e8b-4b97-8b62-2a2f4c1d1a11"
	projA2  = "1c7a6d2f-6e8b-4b97-8b62-2a2f4c1d1a12"
	envA1x  = "2d8b7e3a-7f9c-4ca8-9c73-3b3a5d2e2a21"
	envA1y  = "2d8b7e3a-7f9c-4ca8-9c73-3b3a5d2e2a22"
	resR    = "3e9c8f4b-8a0d-4db9-8d84-4c4b6e3f3a31"
)

var (
	scopeTenantA = Scope{Tenant: tenantA}
	scopeProjA1  = Scope{Tenant: tenantA, Project: projA1}
	scopeProjA2  = Scope{Tenant: tenantA, Project: projA2}
	scopeEnvA1x  = Scope{Tenant: tenantA, Project: projA1, Environment: envA1x}
	scopeEnvA1y  = Scope{Tenant: tenantA, Project: projA1, Environment: envA1y}
	scopeResEnv  = Scope{Tenant: tenantA, Project: projA1, Environment: envA1x, Resource: resR}
	scopeResProj = Scope{Tenant: tenantA, Project: projA1, Resource: resR}
	scopeTenantB = Scope{Tenant: tenantB}
)

func human(id string) Principal {
	return Principal{ID: id, Kind: KindHuman, Issuer: testIssuer, Subject: id}
}
func worker(id string) Principal {
	return Principal{ID: id, Kind: KindWorker, Issuer: testIssuer, Subject: id}
}

func TestScopeContains(t *testing.T) {
	cases := []struct {
		name         string
		outer, inner Scope
		want         bool
	}{
		{"root contains everything", Scope{}, scopeResEnv, true},
		{"root contains root", Scope{}, Scope{}, true},
		{"tenant contains its env", scopeTenantA, scopeEnvA1x, true},
		{"tenant contains itself", scopeTenantA, scopeTenantA, true},
		{"tenant does not contain other tenant", scopeTenantA, scopeTenantB, false},
		{"tenant does not contain root", scopeTenantA, Scope{}, false},
		{"project contains env", scopeProjA1, scopeEnvA1x, true},
		{"project contains project resource", scopeProjA1, scopeResProj, true},
		{"project does not contain sibling", scopeProjA1, scopeProjA2, false},
		{"env does not contain its project", scopeEnvA1x, scopeProjA1, false},
		{"env does not contain sibling env", scopeEnvA1x, scopeEnvA1y, false},
		{"env contains its resource", scopeEnvA1x, scopeResEnv, true},
		{"env does not contain project resource", scopeEnvA1x, scopeResProj, false},
		{"resource contains itself", scopeResEnv, scopeResEnv, true},
		{"resource does not contain env", scopeResEnv, scopeEnvA1x, false},
		{"malformed outer", Scope{Project: projA1}, scopeEnvA1x, false},
		{"malformed inner", scopeTenantA, Scope{Environment: envA1x}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is.New(t).Equal(Contains(tc.outer, tc.inner), tc.want)
		})
	}
}

func TestScopeValidate(t *testing.T) {
	cases := []struct {
		s  Scope
		ok bool
	}{
		{Scope{}, true},
		{scopeResEnv, true},
		{scopeResProj, true},
		{Scope{Tenant: "acme"}, false},
		{Scope{Tenant: "0B6F5C1E-5D7A-4A86-9A51-1F1E3B0C0A01"}, false}, // not canonical
		{Scope{Tenant: "{" + tenantA + "}"}, false},
		{Scope{Project: projA1}, false},
		{Scope{Tenant: tenantA, Environment: envA1x}, false},
		{Scope{Tenant: tenantA, Resource: resR}, false},
	}
	for _, tc := range cases {
		is.New(t).Equal(tc.s.Validate() == nil, tc.ok)
	}
}

func TestAuthorize(t *testing.T) {
	alice := human("alice")
	grants := []Grant{
		{ID: "g-bob", PrincipalID: "bob", Scope: scopeTenantA, Role: RoleTenantAdmin},
		{ID: "g-dev", PrincipalID: "alice", Scope: scopeProjA1, Role: RoleDeveloper},
		{ID: "g-revoked", PrincipalID: "alice", Scope: scopeTenantA, Role: RoleOperator, Revoked: true},
		{ID: "g-res", PrincipalID: "alice", Scope: scopeResEnv, Capabilities: []Capability{CapRunCancel}},
		{ID: "g-unknown-role", PrincipalID: "alice", Scope: scopeTenantA, Role: "superuser"},
		{ID: "g-unknown-cap", PrincipalID: "alice", Scope: scopeTenantA, Capabilities: []Capability{"everything"}},
	}
	cases := []struct {
		name      string
		p         Principal
		c         Capability
		target    Scope
		want      bool
		reason    string
		grantID   string
		grantList []Grant
	}{
		{"role at containing scope", alice, CapCompile, scopeEnvA1x, true, DecisionAllowed, "g-dev", nil},
		{"role at exact scope", alice, CapSimulate, scopeProjA1, true, DecisionAllowed, "g-dev", nil},
		{"outside scope", alice, CapCompile, scopeProjA2, false, DecisionNoMatchingGrant, "", nil},
		{"wider target than grant", alice, CapCompile, scopeTenantA, false, DecisionNoMatchingGrant, "", nil},
		{"capability not in role", alice, CapReleaseActivate, scopeEnvA1x, false, DecisionNoMatchingGrant, "", nil},
		{"revoked grant", alice, CapIncidentResolve, scopeEnvA1x, false, DecisionNoMatchingGrant, "", nil},
		{"resource grant on resource", alice, CapRunCancel, scopeResEnv, true, DecisionAllowed, "g-res", nil},
		{"resource grant not on env", alice, CapRunCancel, scopeEnvA1x, false, DecisionNoMatchingGrant, "", nil},
		{"other principal's grant", alice, CapConnectionManage, scopeTenantA, false, DecisionNoMatchingGrant, "", nil},
		{"unknown role and capability confer nothing", alice, CapRunRead, Scope{Tenant: tenantA, Project: projA2}, false, DecisionNoMatchingGrant, "", nil},
		{"disabled principal", Principal{ID: "alice", Kind: KindHuman, Disabled: true}, CapCompile, scopeEnvA1x, false, DecisionPrincipalDisabled, "", nil},
		{"unknown capability", alice, "root.everything", scopeEnvA1x, false, DecisionUnknownCapability, "", nil},
		{"invalid target", alice, CapCompile, Scope{Tenant: "not-a-uuid"}, false, DecisionInvalidScope, "", nil},
		{"principal without kind", Principal{ID: "alice"}, CapCompile, scopeEnvA1x, false, DecisionPrincipalInvalid, "", nil},
		{"tenant admin", human("bob"), CapConnectionManage, scopeEnvA1y, true, DecisionAllowed, "g-bob", nil},
		{"tenant admin not in other tenant", human("bob"), CapRunRead, scopeTenantB, false, DecisionNoMatchingGrant, "", nil},
		{"no grants", alice, CapRunRead, scopeTenantA, false, DecisionNoMatchingGrant, "", []Grant{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			gl := grants
			if tc.grantList != nil {
				gl = tc.grantList
			}
			d := Authorize(gl, tc.p, tc.c, tc.target)
			is.Equal(d.Allowed, tc.want)
			is.Equal(d.Reason, tc.reason)
			is.Equal(d.GrantID, tc.grantID)
		})
	}
}

func TestPlatformAdminHasNoBusinessAccess(t *testing.T) {
	is := is.New(t)
	root := human("root")
	grants := []Grant{
		{ID: "g-pa", PrincipalID: "root", Scope: Scope{}, Role: RolePlatformAdmin},
		// A malformed stored grant giving business capabilities at the root
		// scope must confer nothing.
		{ID: "g-bad", PrincipalID: "root", Scope: Scope{}, Role: RoleTenantAdmin},
	}
	is.True(AuthorizePlatformAdmin(grants, root).Allowed)
	for _, c := range AllCapabilities() {
		if c == CapGrantAdmin {
			continue
		}
		for _, target := range []Scope{{}, scopeTenantA, scopeEnvA1x} {
			is.True(!Authorize(grants, root, c, target).Allowed) // no business access anywhere
		}
	}
	// grant.admin below the root scope is never honoured.
	scoped := []Grant{{ID: "g", PrincipalID: "root", Scope: scopeTenantA, Capabilities: []Capability{CapGrantAdmin}}}
	is.True(!Authorize(scoped, root, CapGrantAdmin, scopeTenantA).Allowed)
	is.True(!AuthorizePlatformAdmin(scoped, root).Allowed)
}

func TestWorkerNeverGainsAuthoring(t *testing.T) {
	is := is.New(t)
	w := worker("w1")
	// Even a wrongly stored tenant_admin grant only yields task.claim.
	grants := []Grant{{ID: "g-w", PrincipalID: "w1", Scope: scopeEnvA1x, Role: RoleTenantAdmin, Capabilities: []Capability{CapTaskClaim}}}
	for _, c := range AllCapabilities() {
		d := Authorize(grants, w, c, scopeEnvA1x)
		is.Equal(d.Allowed, c == CapTaskClaim)
	}
	// A human with the same grant gets the full role but never task.claim
	// via the role.
	h := human("w1")
	is.True(Authorize(grants, h, CapDefinitionPublish, scopeEnvA1x).Allowed)
	tenantAdmin, _ := RoleCapabilities(RoleTenantAdmin)
	is.True(!tenantAdmin.Has(CapTaskClaim))
}

func TestCheckDelegation(t *testing.T) {
	admin := human("admin")   // tenant_admin on tenant A
	projAdm := human("padm")  // developer + grant.manage on project A1
	root := human("root")     // platform admin
	disabled := human("gone") // tenant admin, disabled
	disabled.Disabled = true
	grants := []Grant{
		{ID: "1", PrincipalID: "admin", Scope: scopeTenantA, Role: RoleTenantAdmin},
		{ID: "2", PrincipalID: "padm", Scope: scopeProjA1, Role: RoleDeveloper, Capabilities: []Capability{CapGrantManage}},
		{ID: "3", PrincipalID: "root", Scope: Scope{}, Role: RolePlatformAdmin},
		{ID: "4", PrincipalID: "gone", Scope: scopeTenantA, Role: RoleTenantAdmin},
		{ID: "5", PrincipalID: "admin", Scope: scopeTenantB, Role: RoleViewer},
	}
	carol, w := human("carol"), worker("w1")
	g := func(p Principal, s Scope, r Role, caps ...Capability) Grant {
		return Grant{ID: "new", PrincipalID: p.ID, Scope: s, Role: r, Capabilities: caps, GrantedBy: "x"}
	}
	cases := []struct {
		name    string
		grantor Principal
		grantee Principal
		grant   Grant
		want    error
	}{
		{"tenant admin delegates developer in project", admin, carol, g(carol, scopeProjA1, RoleDeveloper), nil},
		{"tenant admin delegates tenant admin", admin, carol, g(carol, scopeTenantA, RoleTenantAdmin), nil},
		{"tenant admin delegates grant.manage on env", admin, carol, g(carol, scopeEnvA1x, "", CapGrantManage), nil},
		{"tenant admin outside its tenant", admin, carol, g(carol, scopeTenantB, RoleViewer), ErrNoGrantAuthority},
		{"viewer-only tenant cannot delegate", admin, carol, g(carol, Scope{Tenant: tenantB, Project: projA2}, RoleViewer), ErrNoGrantAuthority},
		{"project admin delegates held role", projAdm, carol, g(carol, scopeEnvA1x, RoleViewer, CapSimulate), nil},
		{"project admin escalates capability", projAdm, carol, g(carol, scopeEnvA1x, RoleDeployer), ErrCapabilityNotHeld},
		{"project admin escalates single capability", projAdm, carol, g(carol, scopeProjA1, "", CapIncidentResolve), ErrCapabilityNotHeld},
		{"project admin at wider scope", projAdm, carol, g(carol, scopeTenantA, RoleViewer), ErrNoGrantAuthority},
		{"project admin at sibling project", projAdm, carol, g(carol, scopeProjA2, RoleViewer), ErrNoGrantAuthority},
		{"project admin grants itself more", projAdm, projAdm, g(projAdm, scopeProjA1, RoleOperator), ErrCapabilityNotHeld},
		{"disabled grantor", disabled, carol, g(carol, scopeProjA1, RoleViewer), ErrGrantorDisabled},
		{"tenant admin cannot grant grant.admin", admin, carol, g(carol, scopeTenantA, "", CapGrantAdmin), ErrPlatformBusiness},
		{"business role at root scope", root, carol, g(carol, Scope{}, RoleViewer), ErrPlatformBusiness},
		{"platform admin grants platform admin", root, carol, g(carol, Scope{}, RolePlatformAdmin), nil},
		{"tenant admin cannot grant platform admin", admin, carol, g(carol, Scope{}, RolePlatformAdmin), ErrNoGrantAuthority},
		{"platform admin bootstraps tenant admin", root, carol, g(carol, scopeTenantB, RoleTenantAdmin), nil},
		{"platform admin cannot bootstrap itself", root, root, g(root, scopeTenantB, RoleTenantAdmin), ErrSelfBootstrap},
		{"platform admin cannot grant business role", root, carol, g(carol, scopeProjA1, RoleDeveloper), ErrNoGrantAuthority},
		{"platform admin cannot bootstrap project", root, carol, g(carol, scopeProjA1, RoleTenantAdmin), ErrNoGrantAuthority},
		{"platform admin bootstrap with extras", root, carol, g(carol, scopeTenantB, RoleTenantAdmin, CapRunRead), ErrNoGrantAuthority},
		{"worker gets worker role", admin, w, g(w, scopeEnvA1x, RoleWorker), nil},
		{"worker cannot get developer", admin, w, g(w, scopeEnvA1x, RoleDeveloper), ErrWorkerCapability},
		{"worker cannot get compile", admin, w, g(w, scopeEnvA1x, RoleWorker, CapCompile), ErrWorkerCapability},
		{"worker cannot get grant.manage", admin, w, g(w, scopeEnvA1x, "", CapGrantManage), ErrWorkerCapability},
		{"worker role outside scope", projAdm, w, g(w, scopeProjA2, RoleWorker), ErrNoGrantAuthority},
		{"human cannot get task.claim without holding it", admin, carol, g(carol, scopeEnvA1x, RoleWorker), ErrCapabilityNotHeld},
		{"grantee mismatch", admin, carol, g(human("dave"), scopeProjA1, RoleViewer), ErrGrantInvalid},
		{"unknown role", admin, carol, g(carol, scopeProjA1, "god"), ErrGrantInvalid},
		{"unknown capability", admin, carol, g(carol, scopeProjA1, "", "all"), ErrGrantInvalid},
		{"empty grant", admin, carol, g(carol, scopeProjA1, ""), ErrGrantInvalid},
		{"invalid scope", admin, carol, g(carol, Scope{Tenant: "acme"}, RoleViewer), ErrGrantInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			err := CheckDelegation(grants, tc.grantor, tc.grantee, tc.grant)
			if tc.want == nil {
				is.NoErr(err)
				return
			}
			is.True(errors.Is(err, tc.want))
		})
	}
}

// Property: across capabilities and scopes, a project-level administrator
// can delegate only capabilities it holds itself at that scope.
func TestDelegationNeverEscalates(t *testing.T) {
	is := is.New(t)
	grantor := human("padm")
	grants := []Grant{{ID: "1", PrincipalID: "padm", Scope: scopeProjA1, Role: RoleDeployer, Capabilities: []Capability{CapGrantManage}}}
	carol := human("carol")
	scopes := []Scope{{}, scopeTenantA, scopeProjA1, scopeProjA2, scopeEnvA1x, scopeResEnv, scopeTenantB}
	for _, s := range scopes {
		for _, c := range AllCapabilities() {
			ng := Grant{PrincipalID: "carol", Scope: s, Capabilities: []Capability{c}}
			err := CheckDelegation(grants, grantor, carol, ng)
			held := Authorize(grants, grantor, c, s).Allowed
			if err == nil {
				is.True(held) // delegated only what it holds
			}
		}
	}
}

func TestCheckRevocation(t *testing.T) {
	admin, root, carol := human("admin"), human("root"), human("carol")
	grants := []Grant{
		{ID: "1", PrincipalID: "admin", Scope: scopeTenantA, Role: RoleTenantAdmin},
		{ID: "2", PrincipalID: "root", Scope: Scope{}, Role: RolePlatformAdmin},
		{ID: "3", PrincipalID: "carol", Scope: scopeProjA1, Role: RoleViewer},
	}
	cases := []struct {
		name    string
		grantor Principal
		target  Grant
		want    error
	}{
		{"tenant admin revokes inside tenant", admin, Grant{PrincipalID: "x", Scope: scopeEnvA1x, Role: RoleOperator}, nil},
		{"tenant admin cannot revoke in other tenant", admin, Grant{PrincipalID: "x", Scope: scopeTenantB, Role: RoleViewer}, ErrNoGrantAuthority},
		{"tenant admin cannot revoke platform admin", admin, Grant{PrincipalID: "root", Role: RolePlatformAdmin}, ErrNoGrantAuthority},
		{"platform admin revokes platform admin", root, Grant{PrincipalID: "y", Role: RolePlatformAdmin}, nil},
		{"platform admin revokes tenant bootstrap", root, Grant{PrincipalID: "admin", Scope: scopeTenantA, Role: RoleTenantAdmin}, nil},
		{"platform admin cannot revoke business grants", root, Grant{PrincipalID: "x", Scope: scopeProjA1, Role: RoleViewer}, ErrNoGrantAuthority},
		{"viewer cannot revoke", carol, Grant{PrincipalID: "x", Scope: scopeProjA1, Role: RoleViewer}, ErrNoGrantAuthority},
		{"disabled grantor", Principal{ID: "admin", Kind: KindHuman, Disabled: true}, Grant{PrincipalID: "x", Scope: scopeEnvA1x, Role: RoleViewer}, ErrGrantorDisabled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			err := CheckRevocation(grants, tc.grantor, tc.target)
			if tc.want == nil {
				is.NoErr(err)
				return
			}
			is.True(errors.Is(err, tc.want))
		})
	}
}

func TestRoleMap(t *testing.T) {
	is := is.New(t)
	defs := RoleDefinitions()
	seen := map[Role]bool{}
	covered := CapabilitySet(0)
	for _, d := range defs {
		for _, inc := range d.Includes {
			is.True(seen[inc]) // includes only earlier roles
		}
		for _, c := range d.Adds {
			is.True(c.Valid())
		}
		seen[d.Role] = true
		s, ok := RoleCapabilities(d.Role)
		is.True(ok)
		covered |= s
	}
	is.Equal(covered, allCaps) // every capability belongs to some role
	is.Equal(len(AllCapabilities()), 27)
	is.Equal(setOf(AllCapabilities()...), allCaps)
	is.Equal(setOf(CapGrantAdmin), platformCaps)
	is.Equal(setOf(CapTaskClaim), workerCaps)

	has := func(r Role, caps ...Capability) {
		s, _ := RoleCapabilities(r)
		for _, c := range caps {
			if !s.Has(c) {
				t.Errorf("role %s lacks %s", r, c)
			}
		}
	}
	lacks := func(r Role, caps ...Capability) {
		s, _ := RoleCapabilities(r)
		for _, c := range caps {
			if s.Has(c) {
				t.Errorf("role %s must not hold %s", r, c)
			}
		}
	}
	// docs/platform-api.md, Authentication item 6.
	has(RoleViewer, CapRunRead)
	has(RoleDeveloper, CapSimulate)
	has(RoleDeployer, CapTriggerManage, CapConnectionBind)
	has(RoleOperator, CapIncidentRead, CapIncidentResolve, CapRunCancel, CapRunRetry, CapRunStart, CapRunSignal)
	has(RoleTenantAdmin, CapConnectionManage)
	// Platform administration and workers.
	pa, _ := RoleCapabilities(RolePlatformAdmin)
	is.Equal(pa, platformCaps)
	wk, _ := RoleCapabilities(RoleWorker)
	is.Equal(wk, workerCaps)
	for _, r := range []Role{RoleViewer, RoleDeveloper, RoleDeployer, RoleOperator, RoleTenantAdmin} {
		lacks(r, CapGrantAdmin, CapTaskClaim)
	}
	lacks(RoleViewer, CapIncidentRead, CapCompile)
	lacks(RoleOperator, CapCompile, CapDefinitionPublish, CapReleaseActivate)
	lacks(RoleDeveloper, CapRunStart, CapReleaseActivate)
	// tenant_admin is the union of the business roles plus its own.
	ta, _ := RoleCapabilities(RoleTenantAdmin)
	dep, _ := RoleCapabilities(RoleDeployer)
	op, _ := RoleCapabilities(RoleOperator)
	is.True(ta.ContainsAll(dep | op))
	is.Equal(ta, businessCaps&^workerCaps)
	is.True(slices.Equal(AllRoles(), []Role{RoleViewer, RoleDeveloper, RoleDeployer, RoleOperator, RoleTenantAdmin, RolePlatformAdmin, RoleWorker}))
}

func TestRolesDoc(t *testing.T) {
	want := RolesMarkdown()
	if *updateRoles {
		if err := os.WriteFile("ROLES.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("ROLES.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("ROLES.md is out of date; run: go test ./platform/auth -run TestRolesDoc -update-roles")
	}
}

func TestCapabilitySet(t *testing.T) {
	is := is.New(t)
	s, err := NewCapabilitySet(CapRunRead, CapCompile)
	is.NoErr(err)
	is.Equal(s.Len(), 2)
	is.Equal(s.List(), []Capability{CapCompile, CapRunRead})
	is.Equal(s.String(), "{compile, run.read}")
	is.True(s.Has(CapRunRead))
	is.True(!s.Has(CapRunStart))
	is.True(!s.Has("bogus"))
	_, err = NewCapabilitySet("bogus")
	is.True(err != nil)
	for i, c := range AllCapabilities() {
		idx, ok := capIndex(c)
		is.True(ok)
		is.Equal(int(idx), i) // spec order = bit order
	}
}

func TestIsCanonicalUUID(t *testing.T) {
	is := is.New(t)
	for range 100 {
		u := uuid.NewString()
		is.True(isCanonicalUUID(u))
		is.True(!isCanonicalUUID(strings.ToUpper(u)))
	}
	for _, bad := range []string{"", tenantA[:35], tenantA + "0", strings.ReplaceAll(tenantA, "-", "_"), "urn:uuid:" + tenantA, "g" + tenantA[1:]} {
		is.True(!isCanonicalUUID(bad))
	}
}

func TestPrincipalLinkedTo(t *testing.T) {
	is := is.New(t)
	p := human("alice")
	is.True(p.LinkedTo(&Claims{Issuer: testIssuer, Subject: "alice"}))
	is.True(!p.LinkedTo(&Claims{Issuer: "https://other", Subject: "alice"}))
	is.True(!p.LinkedTo(&Claims{Issuer: testIssuer, Subject: "bob"}))
	is.True(!p.LinkedTo(nil))
	is.True(!(Principal{ID: "x"}).LinkedTo(&Claims{}))
}
