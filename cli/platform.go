package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentbridge/bridge/client"

	"github.com/spf13/cobra"
)

// platformCmd is `bridge platform`: identity, provisioning and access
// administration of the workflow platform, through its API.
func (a *app) platformCmd() *cobra.Command {
	var provider string
	cmd := &cobra.Command{
		Use:   "platform",
		Short: "Administer the workflow platform: sign-in, tenants, projects, environments, grants",
		Long: `Commands for the workflow platform of the running daemon. They call the
platform API with your platform access token: by default the local operator's,
obtained from the built-in identity provider and approved with the owner token
(see 'bridge platform login'); with --provider, the token cached by
'bridge login --provider <id>'.

'bridge serve' creates a local workspace (tenant, project, environment) on a
fresh data directory, with you, the local operator, as its administrator: see
'bridge platform identity'.

Exit codes: 0 ok, 1 failure (the API's problem code is shown), 2 usage,
3 daemon not running.`,
		Example: `  bridge platform login
  bridge platform identity
  bridge platform project create --tenant <tenant-id> --name payments
  bridge platform grant --principal <principal-id> --tenant <tenant-id> --role viewer`,
	}
	cmd.PersistentFlags().StringVar(&provider, "provider", "local", "identity provider whose cached token to use")
	cmd.AddCommand(a.platformLoginCmd(), a.platformLogoutCmd(&provider), a.platformTokenCmd(&provider), a.platformIdentityCmd(&provider),
		a.platformTenantCmd(&provider), a.platformProjectCmd(&provider), a.platformEnvironmentCmd(&provider),
		a.platformGrantCmd(&provider), a.platformPrincipalCmd(&provider))
	return cmd
}

func (a *app) platformIdentityCmd(provider *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "identity",
		Aliases: []string{"whoami", "workspace"},
		Short:   "Show your principal, grants and workspaces",
		Long: `Shows GET /api/v1/identity for your token: your principal id and kind, your
current grants, and the tenants, projects and environments you can use.`,
		Example: `  bridge platform identity
  bridge platform identity --json | jq -r '.workspaces[0].projects[0].environments[0].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.platformSession(cmd.Context(), *provider)
			if err != nil {
				return err
			}
			id, err := client.Platform{D: s}.Identity(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(id)
			}
			printIdentity(a, id)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the identity as JSON")
	return cmd
}

// printIdentity writes an identity for people.
func printIdentity(a *app, id client.Identity) {
	name := ""
	if id.Name != "" {
		name = ", " + id.Name
	}
	fmt.Fprintf(a.out, "Principal %s (%s%s)\n", id.PrincipalID, id.Kind, name)
	fmt.Fprintln(a.out, "Grants:")
	if len(id.Grants) == 0 {
		fmt.Fprintln(a.out, "  none: ask an administrator for access")
	}
	for _, g := range id.Grants {
		fmt.Fprintf(a.out, "  %-34s %s  (grant %s)\n", grantWhat(g), scopeText(g.Scope), g.ID)
	}
	fmt.Fprintln(a.out, "Workspaces:")
	if len(id.Workspaces) == 0 {
		fmt.Fprintln(a.out, "  none")
	}
	for _, t := range id.Workspaces {
		fmt.Fprintf(a.out, "  tenant      %s  %s\n", t.ID, t.Name)
		for _, p := range t.Projects {
			fmt.Fprintf(a.out, "    project     %s  %s\n", p.ID, p.Name)
			for _, e := range p.Environments {
				fmt.Fprintf(a.out, "      environment %s  %s\n", e.ID, e.Name)
			}
		}
	}
}

func grantWhat(g client.Grant) string {
	parts := []string{}
	if g.Role != "" {
		parts = append(parts, g.Role)
	}
	parts = append(parts, g.Capabilities...)
	return strings.Join(parts, "+")
}

func scopeText(s client.Scope) string {
	var parts []string
	for _, f := range []struct{ n, v string }{{"tenant", s.Tenant}, {"project", s.Project}, {"environment", s.Environment}, {"resource", s.Resource}} {
		if f.v != "" {
			parts = append(parts, f.n+" "+f.v)
		}
	}
	if len(parts) == 0 {
		return "platform"
	}
	return strings.Join(parts, " / ")
}

// changeFlags are the flags every creating command shares.
type changeFlags struct {
	asJSON bool
	key    string
}

func (f *changeFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	cmd.Flags().StringVar(&f.key, "idempotency-key", "", "Idempotency-Key (1 to 200 characters): retrying with the same key and values returns the first result")
}

func (f *changeFlags) headers() map[string]string {
	if f.key == "" {
		return nil
	}
	return map[string]string{client.HeaderIdempotencyKey: f.key}
}

func requireFlags(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		_ = cmd.MarkFlagRequired(n)
	}
}

// scopeIDs are the required --tenant, --project and --environment flags
// that address a tenant, a project or an environment.
type scopeIDs struct{ tenant, project, environment string }

// add defines the id flags named ("tenant", "project", "environment") and
// marks them required.
func (s *scopeIDs) add(cmd *cobra.Command, names ...string) {
	vars := map[string]*string{"tenant": &s.tenant, "project": &s.project, "environment": &s.environment}
	for _, n := range names {
		cmd.Flags().StringVar(vars[n], n, "", n+" id; required")
	}
	requireFlags(cmd, names...)
}

func (s *scopeIDs) tenantPath() string { return "/api/v1/tenants/" + url.PathEscape(s.tenant) }

func (s *scopeIDs) projectPath() string {
	return s.tenantPath() + "/projects/" + url.PathEscape(s.project)
}

func (s *scopeIDs) environmentPath() string {
	return s.projectPath() + "/environments/" + url.PathEscape(s.environment)
}

// createCmd completes cmd, which carries the help text and Args: it POSTs
// body() to path() and prints the created T, as JSON with --json, else with
// text. It has the changeFlags.
func createCmd[T any](a *app, provider *string, cmd *cobra.Command, path func() string, body func() any, text func(T)) *cobra.Command {
	var f changeFlags
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		s, err := a.platformSession(cmd.Context(), *provider)
		if err != nil {
			return err
		}
		var v T
		if _, err := s.call(cmd.Context(), http.MethodPost, path(), f.headers(), body(), &v); err != nil {
			return err
		}
		if f.asJSON {
			return a.printJSON(v)
		}
		text(v)
		return nil
	}
	f.add(cmd)
	return cmd
}

// listCmd completes cmd, which carries the help text and Args: it collects
// every page of Ts from path() and prints them, as a JSON array with --json
// (described by jsonHelp), else one row each.
func listCmd[T any](a *app, provider *string, cmd *cobra.Command, jsonHelp string, path func() string, row func(T)) *cobra.Command {
	var asJSON bool
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		s, err := a.platformSession(cmd.Context(), *provider)
		if err != nil {
			return err
		}
		items, err := collectPages[T](cmd.Context(), s, path(), false)
		if err != nil {
			return err
		}
		if asJSON {
			return a.printJSON(nonNil(items))
		}
		for _, it := range items {
			row(it)
		}
		return nil
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonHelp)
	return cmd
}

// showCmd completes cmd, which carries the help text and Args: it GETs a T
// from path(args) and prints it, as JSON with --json (described by
// jsonHelp), else with text.
func showCmd[T any](a *app, provider *string, cmd *cobra.Command, jsonHelp string, path func(args []string) string, text func(T)) *cobra.Command {
	var asJSON bool
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var v T
		if err := a.platformGet(cmd.Context(), *provider, path(args), &v); err != nil {
			return err
		}
		if asJSON {
			return a.printJSON(v)
		}
		text(v)
		return nil
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonHelp)
	return cmd
}

func (a *app) platformTenantCmd(provider *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tenant",
		Short:   "Create and show tenants",
		Long:    `Tenants are organisations or teams: the top of the scope hierarchy.`,
		Example: "  bridge platform tenant create --name acme\n  bridge platform tenant show --tenant <tenant-id>",
	}
	var name, admin string
	var noAdmin bool
	var f changeFlags
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a tenant (administered by you unless --admin or --no-admin)",
		Long: `Creates a tenant (POST /admin/tenants). It is sent with the daemon owner token,
which authenticates the built-in system principal (platform administration
only), so that the new tenant's first administrator can be you, the local
operator (the default), another principal (--admin <principal-id>), or nobody
yet (--no-admin). Platform administration alone never gives access to a
tenant's business.`,
		Example: `  bridge platform tenant create --name acme
  bridge platform tenant create --name acme --admin <principal-id> --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, err := a.platformSession(ctx, *provider)
			if err != nil {
				return err
			}
			req := client.CreateTenantRequest{Name: name, AdminPrincipalID: admin}
			if noAdmin {
				if admin != "" {
					return withCode(ExitUsage, errors.New("--admin and --no-admin exclude each other"))
				}
			} else if admin == "" {
				if req.AdminPrincipalID, err = localOperatorID(ctx, s); err != nil {
					return err
				}
			}
			var t client.Tenant
			if _, err := s.callOwner(ctx, http.MethodPost, "/admin/tenants", f.headers(), req, &t); err != nil {
				return err
			}
			if f.asJSON {
				return a.printJSON(t)
			}
			fmt.Fprintf(a.out, "Created tenant %s (%s)\n", t.ID, t.Name)
			if req.AdminPrincipalID != "" {
				fmt.Fprintf(a.out, "Administrator: principal %s\n", req.AdminPrincipalID)
			}
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "display name (1 to 200 characters); required")
	create.Flags().StringVar(&admin, "admin", "", "principal id of the tenant's first administrator (default: the local operator)")
	create.Flags().BoolVar(&noAdmin, "no-admin", false, "create the tenant without an administrator")
	f.add(create)
	requireFlags(create, "name")

	var showIDs scopeIDs
	show := showCmd(a, provider, &cobra.Command{
		Use:     "show",
		Short:   "Show a tenant",
		Long:    "Shows a tenant (GET /api/v1/tenants/{tenant}); needs status.read on it.",
		Example: "  bridge platform tenant show --tenant <tenant-id>",
		Args:    cobra.NoArgs,
	}, "print the tenant as JSON", func([]string) string { return showIDs.tenantPath() }, func(t client.Tenant) {
		fmt.Fprintf(a.out, "Tenant %s (%s), revision %d, created %s\n", t.ID, t.Name, t.Revision, t.CreatedAt.Format("2006-01-02 15:04:05Z07:00"))
	})
	showIDs.add(show, "tenant")
	cmd.AddCommand(create, show)
	return cmd
}

// localOperatorID finds the local operator's principal with the owner token.
func localOperatorID(ctx context.Context, s *platformSession) (string, error) {
	var ps []client.Principal
	q := "/admin/principals?issuer=" + url.QueryEscape(client.LocalIssuer) + "&subject=" + url.QueryEscape(client.LocalOperatorSubject)
	ps, err := collectPages[client.Principal](ctx, s, q, true)
	if err != nil {
		return "", err
	}
	if len(ps) == 0 {
		return "", errors.New("the local operator has no principal; pass --admin or --no-admin")
	}
	return ps[0].ID, nil
}

func (a *app) platformGet(ctx context.Context, provider, path string, out any) error {
	s, err := a.platformSession(ctx, provider)
	if err != nil {
		return err
	}
	_, err = s.call(ctx, http.MethodGet, path, nil, nil, out)
	return err
}

func (a *app) platformProjectCmd(provider *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "project",
		Short:   "Create, list and show projects",
		Long:    "Projects group definitions (workflows, actions, connectors, decision tables) inside a tenant.",
		Example: "  bridge platform project create --tenant <tenant-id> --name payments\n  bridge platform project list --tenant <tenant-id>",
	}
	var createIDs scopeIDs
	var name string
	create := createCmd(a, provider, &cobra.Command{
		Use:     "create",
		Short:   "Create a project in a tenant",
		Long:    "Creates a project (POST /api/v1/tenants/{tenant}/projects); needs grant.manage on the tenant.",
		Example: "  bridge platform project create --tenant <tenant-id> --name payments\n  bridge platform project create --tenant <tenant-id> --name payments --json | jq -r .id",
		Args:    cobra.NoArgs,
	}, func() string { return createIDs.tenantPath() + "/projects" },
		func() any { return client.CreateProjectRequest{Name: name} },
		func(p client.Project) {
			fmt.Fprintf(a.out, "Created project %s (%s) in tenant %s\n", p.ID, p.Name, p.TenantID)
		})
	createIDs.add(create, "tenant")
	create.Flags().StringVar(&name, "name", "", "display name (1 to 200 characters); required")
	requireFlags(create, "name")

	var listIDs scopeIDs
	list := listCmd(a, provider, &cobra.Command{
		Use:     "list",
		Short:   "List the projects of a tenant",
		Long:    "Lists every project of a tenant, in id order; needs status.read on the tenant.",
		Example: "  bridge platform project list --tenant <tenant-id>",
		Args:    cobra.NoArgs,
	}, "print the projects as a JSON array", func() string { return listIDs.tenantPath() + "/projects?limit=100" }, func(p client.Project) {
		fmt.Fprintf(a.out, "%s  %s\n", p.ID, p.Name)
	})
	listIDs.add(list, "tenant")

	var showIDs scopeIDs
	show := showCmd(a, provider, &cobra.Command{
		Use:     "show",
		Short:   "Show a project",
		Long:    "Shows a project (GET /api/v1/tenants/{tenant}/projects/{project}); needs status.read on it.",
		Example: "  bridge platform project show --tenant <tenant-id> --project <project-id>",
		Args:    cobra.NoArgs,
	}, "print the project as JSON", func([]string) string { return showIDs.projectPath() }, func(p client.Project) {
		fmt.Fprintf(a.out, "Project %s (%s) in tenant %s, revision %d\n", p.ID, p.Name, p.TenantID, p.Revision)
	})
	showIDs.add(show, "tenant", "project")
	cmd.AddCommand(create, list, show)
	return cmd
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (a *app) platformEnvironmentCmd(provider *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "environment",
		Aliases: []string{"env"},
		Short:   "Create, list and show environments",
		Long:    "Environments are where versions are activated and runs execute, inside a project.",
		Example: "  bridge platform environment create --tenant <tenant-id> --project <project-id> --name production",
	}
	var createIDs scopeIDs
	var name string
	create := createCmd(a, provider, &cobra.Command{
		Use:     "create",
		Short:   "Create an environment in a project",
		Long:    "Creates an environment (POST .../projects/{project}/environments); needs grant.manage on the project.",
		Example: "  bridge platform environment create --tenant <tenant-id> --project <project-id> --name production",
		Args:    cobra.NoArgs,
	}, func() string { return createIDs.projectPath() + "/environments" },
		func() any { return client.CreateEnvironmentRequest{Name: name} },
		func(e client.Environment) {
			fmt.Fprintf(a.out, "Created environment %s (%s) in project %s\n", e.ID, e.Name, e.ProjectID)
		})
	createIDs.add(create, "tenant", "project")
	create.Flags().StringVar(&name, "name", "", "display name (1 to 200 characters); required")
	requireFlags(create, "name")

	var listIDs scopeIDs
	list := listCmd(a, provider, &cobra.Command{
		Use:     "list",
		Short:   "List the environments of a project",
		Long:    "Lists every environment of a project, in id order; needs status.read on the project.",
		Example: "  bridge platform environment list --tenant <tenant-id> --project <project-id>",
		Args:    cobra.NoArgs,
	}, "print the environments as a JSON array", func() string { return listIDs.projectPath() + "/environments?limit=100" }, func(e client.Environment) {
		fmt.Fprintf(a.out, "%s  %s\n", e.ID, e.Name)
	})
	listIDs.add(list, "tenant", "project")

	var showIDs scopeIDs
	show := showCmd(a, provider, &cobra.Command{
		Use:     "show",
		Short:   "Show an environment",
		Long:    "Shows an environment (GET .../projects/{project}/environments/{environment}); needs status.read on it.",
		Example: "  bridge platform environment show --tenant <tenant-id> --project <project-id> --environment <environment-id>",
		Args:    cobra.NoArgs,
	}, "print the environment as JSON", func([]string) string { return showIDs.environmentPath() }, func(e client.Environment) {
		fmt.Fprintf(a.out, "Environment %s (%s) in project %s of tenant %s, revision %d\n", e.ID, e.Name, e.ProjectID, e.TenantID, e.Revision)
	})
	showIDs.add(show, "tenant", "project", "environment")
	cmd.AddCommand(create, list, show)
	return cmd
}

func (a *app) platformGrantCmd(provider *string) *cobra.Command {
	var req client.GrantRequest
	var caps string
	var f changeFlags
	cmd := &cobra.Command{
		Use:   "grant",
		Short: "Grant a principal a role or capabilities at a scope",
		Long: `Creates a grant (POST /admin/grants): a role (viewer, developer, deployer,
operator, tenant_admin, platform_admin, worker) and/or explicit capabilities,
at a scope: the platform (no scope flags), a tenant, a project, an environment
or a resource. Grants cannot escalate: you need grant.manage at a scope
containing the new grant and must hold every capability you delegate
(platform-level grants need grant.admin). See docs/platform-roles.md.

Subcommands list and revoke grants.`,
		Example: `  bridge platform grant --principal <principal-id> --tenant <tenant-id> --role viewer
  bridge platform grant --principal <id> --tenant <t> --project <p> --environment <e> --role operator
  bridge platform grant --principal <worker-id> --tenant <t> --project <p> --environment <e> --role worker
  bridge platform grant list --tenant <tenant-id>`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req.Capabilities = splitList(caps)
			s, err := a.platformSession(cmd.Context(), *provider)
			if err != nil {
				return err
			}
			var id string
			if _, err := s.call(cmd.Context(), http.MethodPost, "/admin/grants", f.headers(), req, &id); err != nil {
				return err
			}
			if f.asJSON {
				return a.printJSON(map[string]string{"id": id})
			}
			fmt.Fprintf(a.out, "Granted %s at %s to principal %s (grant %s)\n",
				grantWhat(client.Grant{Role: req.Role, Capabilities: req.Capabilities}), scopeText(req.Scope), req.PrincipalID, id)
			return nil
		},
	}
	cmd.Flags().StringVar(&req.PrincipalID, "principal", "", "principal id of the grantee; required")
	cmd.Flags().StringVar(&req.Scope.Tenant, "tenant", "", "tenant id of the scope")
	cmd.Flags().StringVar(&req.Scope.Project, "project", "", "project id of the scope (needs --tenant)")
	cmd.Flags().StringVar(&req.Scope.Environment, "environment", "", "environment id of the scope (needs --project)")
	cmd.Flags().StringVar(&req.Scope.Resource, "resource", "", "resource id of the scope (needs --project)")
	cmd.Flags().StringVar(&req.Role, "role", "", "role: viewer, developer, deployer, operator, tenant_admin, platform_admin or worker")
	cmd.Flags().StringVar(&caps, "capability", "", "comma-separated capabilities added to the role's (e.g. run.read,run.start)")
	f.add(cmd)
	requireFlags(cmd, "principal")

	var listIDs scopeIDs
	var principal string
	var revoked bool
	list := listCmd(a, provider, &cobra.Command{
		Use:     "list",
		Short:   "List the grants inside a tenant",
		Long:    "Lists the grants of a tenant (GET /api/v1/tenants/{tenant}/grants); needs grant.manage on the tenant.",
		Example: "  bridge platform grant list --tenant <tenant-id>\n  bridge platform grant list --tenant <tenant-id> --principal <principal-id> --include-revoked --json",
		Args:    cobra.NoArgs,
	}, "print the grants as a JSON array", func() string {
		q := url.Values{"limit": {"100"}}
		if principal != "" {
			q.Set("principal_id", principal)
		}
		if revoked {
			q.Set("include_revoked", "true")
		}
		return listIDs.tenantPath() + "/grants?" + q.Encode()
	}, func(g client.Grant) {
		state := ""
		if g.Revoked {
			state = "  (revoked)"
		}
		fmt.Fprintf(a.out, "%s  principal %s  %s  %s%s\n", g.ID, g.PrincipalID, grantWhat(g), scopeText(g.Scope), state)
	})
	listIDs.add(list, "tenant")
	list.Flags().StringVar(&principal, "principal", "", "only this principal's grants")
	list.Flags().BoolVar(&revoked, "include-revoked", false, "also list revoked grants")

	var revokeJSON bool
	revoke := &cobra.Command{
		Use:     "revoke <grant-id>",
		Short:   "Revoke a grant",
		Long:    "Revokes a grant (DELETE /admin/grants/{grant}); it applies on the grantee's next request, whatever its token's expiry.",
		Example: "  bridge platform grant revoke <grant-id>",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.platformSession(cmd.Context(), *provider)
			if err != nil {
				return err
			}
			var g client.Grant
			if _, err := s.call(cmd.Context(), http.MethodDelete, "/admin/grants/"+url.PathEscape(args[0]), nil, nil, &g); err != nil {
				return err
			}
			if revokeJSON {
				return a.printJSON(g)
			}
			fmt.Fprintf(a.out, "Revoked grant %s (%s at %s of principal %s)\n", g.ID, grantWhat(g), scopeText(g.Scope), g.PrincipalID)
			return nil
		},
	}
	revoke.Flags().BoolVar(&revokeJSON, "json", false, "print the revoked grant as JSON")
	cmd.AddCommand(list, revoke)
	return cmd
}

func (a *app) platformPrincipalCmd(provider *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "principal",
		Short: "Link sign-ins to principals; list, show, disable and enable principals",
		Long: `A principal is a person (human), application or worker, linked to a sign-in by
the issuer and subject of its tokens. A sign-in without a principal is refused
(401); a principal without grants may do nothing (403).`,
		Example: "  bridge platform principal create --kind human --issuer https://sso.example.com/realms/acme --subject 5f1c...\n  bridge platform principal disable <principal-id>",
	}
	var req client.CreatePrincipalRequest
	create := createCmd(a, provider, &cobra.Command{
		Use:     "create",
		Short:   "Link a sign-in to a new principal",
		Long:    "Creates a principal (POST /admin/principals); needs grant.admin or grant.manage. Grant it access with 'bridge platform grant'.",
		Example: "  bridge platform principal create --kind human --issuer https://sso.example.com/realms/acme --subject alice --name Alice",
		Args:    cobra.NoArgs,
	}, func() string { return "/admin/principals" },
		func() any { return req },
		func(p client.Principal) {
			fmt.Fprintf(a.out, "Created principal %s (%s, %s at %s)\n", p.ID, p.Kind, p.Subject, p.Issuer)
		})
	create.Flags().StringVar(&req.Kind, "kind", "human", "human, application or worker")
	create.Flags().StringVar(&req.Issuer, "issuer", "", "issuer (iss) of the sign-in's tokens; required")
	create.Flags().StringVar(&req.Subject, "subject", "", "subject (sub) of the sign-in's tokens; required")
	create.Flags().StringVar(&req.Name, "name", "", "display name")
	requireFlags(create, "issuer", "subject")

	var kind, issuer, subject string
	list := listCmd(a, provider, &cobra.Command{
		Use:     "list",
		Short:   "List principals",
		Long:    "Lists principals (GET /admin/principals), optionally only one kind, issuer or subject; needs grant.admin or grant.manage.",
		Example: "  bridge platform principal list\n  bridge platform principal list --kind worker --json",
		Args:    cobra.NoArgs,
	}, "print the principals as a JSON array", func() string {
		q := url.Values{"limit": {"100"}}
		for k, v := range map[string]string{"kind": kind, "issuer": issuer, "subject": subject} {
			if v != "" {
				q.Set(k, v)
			}
		}
		return "/admin/principals?" + q.Encode()
	}, func(p client.Principal) {
		state := ""
		if p.Disabled {
			state = "  (disabled)"
		}
		fmt.Fprintf(a.out, "%s  %-11s %s at %s%s\n", p.ID, p.Kind, p.Subject, p.Issuer, state)
	})
	list.Flags().StringVar(&kind, "kind", "", "only this kind")
	list.Flags().StringVar(&issuer, "issuer", "", "only this issuer")
	list.Flags().StringVar(&subject, "subject", "", "only this subject")

	show := showCmd(a, provider, &cobra.Command{
		Use:     "show <principal-id>",
		Short:   "Show a principal",
		Long:    "Shows a principal (GET /admin/principals/{principal}): yourself, or anyone with grant.admin or grant.manage.",
		Example: "  bridge platform principal show <principal-id>",
		Args:    cobra.ExactArgs(1),
	}, "print the principal as JSON", func(args []string) string { return "/admin/principals/" + url.PathEscape(args[0]) }, func(p client.Principal) {
		state := "enabled"
		if p.Disabled {
			state = "disabled"
		}
		fmt.Fprintf(a.out, "Principal %s (%s, %s), %s at %s, revision %d\n", p.ID, p.Kind, state, p.Subject, p.Issuer, p.Revision)
	})
	cmd.AddCommand(create, list, show, a.principalStateCmd(provider, true), a.principalStateCmd(provider, false))
	return cmd
}

func (a *app) principalStateCmd(provider *string, disable bool) *cobra.Command {
	verb := "enable"
	if disable {
		verb = "disable"
	}
	var asJSON bool
	var revision string
	cmd := &cobra.Command{
		Use:   verb + " <principal-id>",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a principal",
		Long: fmt.Sprintf(`%ss a principal (POST /admin/principals/{principal}/%s); needs grant.admin. It
applies on the principal's next request, whatever its token's expiry. With
--revision, the change is made only if the principal is still at that revision.`, strings.ToUpper(verb[:1])+verb[1:], verb),
		Example: fmt.Sprintf("  bridge platform principal %s <principal-id>\n  bridge platform principal %s <principal-id> --revision 3", verb, verb),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.platformSession(cmd.Context(), *provider)
			if err != nil {
				return err
			}
			var hdr map[string]string
			if revision != "" {
				hdr = map[string]string{"If-Match": `"` + revision + `"`}
			}
			var p client.Principal
			if _, err := s.call(cmd.Context(), http.MethodPost, "/admin/principals/"+url.PathEscape(args[0])+"/"+verb, hdr, nil, &p); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(p)
			}
			fmt.Fprintf(a.out, "Principal %s is %sd (revision %d)\n", p.ID, verb, p.Revision)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the principal as JSON")
	cmd.Flags().StringVar(&revision, "revision", "", "expected current revision (If-Match)")
	return cmd
}
