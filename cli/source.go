package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/agentbridge/bridge/client"

	"github.com/spf13/cobra"
)

func (a *app) sourceCmd() *cobra.Command {
	var t envTarget
	cmd := &cobra.Command{
		Use:     "source",
		Aliases: []string{"sources"},
		Short:   "Provider sources: Slack, WhatsApp, Telegram or GitHub events start or signal runs",
		Long: `A provider source binds a connection revision to a target: each event the
provider delivers to the source's ingress URL (POST /provider-ingress/<id> on
the services listener, authenticated by the provider's own signature) is
stored as a receipt and then starts a run of an activation (kind run) or
sends a signal to a waiting run (kind signal), once per event identity.
Watch receipts with 'bridge receipt list'.

The mapping is a workflow expression over input.event (the normalized event,
see 'bridge source packages'), input.kind, input.event_id and
input.account_id; without one the normalized event is the run input or signal
payload. It is checked against every dispatchable event kind's schema when the
source is created.

Exit codes: 0 ok, 1 failure (the API's problem code is shown), 2 usage,
3 daemon not running.`,
		Example: `  bridge source create --name support --connection <connection-id> --workflow acme/flow --mapping '{"name": input.event.text}'
  bridge source create --name replies --connection <connection-id> --run <run-id> --signal chat.reply
  bridge source list
  bridge source disable <source-id>`,
	}
	t.add(cmd, true)
	cmd.AddCommand(a.sourcePackagesCmd(&t), a.sourceCreateCmd(&t), a.sourceListCmd(&t), a.sourceGetCmd(&t, false), a.sourceGetCmd(&t, true))
	return cmd
}

// packages reads GET P/provider-packages.
func packages(ctx context.Context, tg *target) ([]client.Package, error) {
	var list struct {
		Items []client.Package `json:"items"`
	}
	err := tg.call(ctx, http.MethodGet, tg.ids.projectPath()+"/provider-packages", nil, nil, &list)
	return list.Items, err
}

func (a *app) sourcePackagesCmd(t *envTarget) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "packages",
		Short:   "List the built-in provider packages: event kinds, dispatchable kinds, schema digests",
		Example: "  bridge source packages\n  bridge source packages --json | jq '.[] | select(.provider==\"slack\") | .event_schemas.message'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			items, err := packages(ctx, tg)
			if err != nil {
				return err
			}
			return printTable(a, items, asJSON, "no packages", "PROVIDER\tPACKAGE\tVERSION\tADAPTER\tDISPATCHABLE\tSCHEMA DIGEST", func(p client.Package) []string {
				return []string{p.Provider, p.Name, p.Version, p.AdapterVersion, strings.Join(p.Dispatchable, ","), p.SchemaDigest}
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the packages (with their event schemas) as a JSON array")
	return cmd
}

func (a *app) sourceCreateCmd(t *envTarget) *cobra.Command {
	var req client.SourceRequest
	var connection, workflow, pkg string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create --name <name> --connection <id> (--workflow <id[@version]> | --activation <id> | --run <id> --signal <name>)",
		Short: "Create a provider source and print its ingress URL",
		Long: `--connection takes a connection id (its newest revision is bound) or a
revision id. The package defaults to the provider's only built-in package
(--package name@version otherwise) and schema_digest to that package's, so
the source pins the event schemas you see in 'bridge source packages'. The
policy is the connection revision's config. You need trigger.manage,
connection.manage, connection.bind and run.start (or run.signal).`,
		Example: `  bridge source create --name support --connection <connection-id> --workflow acme/flow --mapping '{"name": input.event.text}'
  bridge source create --name replies --connection <connection-id> --run <run-id> --signal chat.reply --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			targets := 0
			for _, v := range []string{workflow, req.ActivationID, req.RunID} {
				if v != "" {
					targets++
				}
			}
			if targets != 1 || (req.RunID != "") != (req.Signal != "") {
				return withCode(ExitUsage, errors.New("give one target: --workflow, --activation, or --run with --signal"))
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			conn, err := tg.api().Connection(ctx, tg.e(), connection)
			if err != nil {
				return err
			}
			req.Provider, req.ConnectionRevisionID, req.Policy = conn.Provider, conn.ID, conn.Config
			all, err := packages(ctx, tg)
			if err != nil {
				return err
			}
			var found []client.Package
			for _, p := range all {
				if p.Provider == conn.Provider && (pkg == "" || pkg == p.Name || pkg == p.Name+"@"+p.Version) &&
					(req.AdapterVersion == "" || req.AdapterVersion == p.AdapterVersion) {
					found = append(found, p)
				}
			}
			if len(found) != 1 {
				return withCode(ExitUsage, fmt.Errorf("%d %s packages match; name one with --package name@version (see 'bridge source packages')", len(found), conn.Provider))
			}
			p := found[0]
			req.Package, req.PackageVersion, req.AdapterVersion = p.Name, p.Version, p.AdapterVersion
			if req.SchemaDigest == "" {
				req.SchemaDigest = p.SchemaDigest
			}
			req.Kind = client.SourceKindRun
			if req.RunID != "" {
				req.Kind = client.SourceKindSignal
			}
			if workflow != "" {
				x, err := activeActivation(ctx, tg, workflow)
				if err != nil {
					return err
				}
				req.ActivationID = x.ID
			}
			var s client.Source
			if err := tg.call(ctx, http.MethodPost, tg.env("/provider-sources"), nil, req, &s); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(s)
			}
			a.printSource(tg, s)
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Name, "name", "", "display name (required)")
	cmd.Flags().StringVar(&connection, "connection", "", "connection id or connection revision id (required)")
	cmd.Flags().StringVar(&workflow, "workflow", "", "kind run: the workflow whose active activation starts")
	cmd.Flags().StringVar(&req.ActivationID, "activation", "", "kind run: the activation that starts")
	cmd.Flags().StringVar(&req.RunID, "run", "", "kind signal: the run to signal")
	cmd.Flags().StringVar(&req.Signal, "signal", "", "kind signal: the signal name")
	cmd.Flags().StringVar(&req.Mapping, "mapping", "", "workflow expression over input.event, input.kind, input.event_id, input.account_id (default: the event)")
	cmd.Flags().StringVar(&pkg, "package", "", "package name or name@version (default: the provider's only one)")
	cmd.Flags().StringVar(&req.AdapterVersion, "adapter-version", "", "adapter version (default: the only one)")
	cmd.Flags().StringVar(&req.SchemaDigest, "schema-digest", "", "the schema_digest to pin (default: the package's)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the source as JSON")
	requireFlags(cmd, "name", "connection")
	return cmd
}

// printSource writes a source for people with its full ingress URL.
func (a *app) printSource(tg *target, s client.Source) {
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	state := "enabled"
	if s.Disabled {
		state = "disabled"
	}
	fmt.Fprintf(tw, "Source %s %s\n", s.ID, state)
	fmt.Fprintf(tw, "  name\t%s\n", s.Name)
	fmt.Fprintf(tw, "  ingress url\t%s\n", tg.s.c.state.ServicesURL+s.IngressURL)
	fmt.Fprintf(tw, "  package\t%s %s@%s (adapter %s)\n", s.Provider, s.Package, s.PackageVersion, s.AdapterVersion)
	fmt.Fprintf(tw, "  connection\t%s\n", s.ConnectionRevisionID)
	if s.Kind == client.SourceKindRun {
		fmt.Fprintf(tw, "  starts\t%s\n", *s.ActivationID)
	} else {
		fmt.Fprintf(tw, "  signals\t%s to run %s\n", *s.Signal, *s.RunID)
	}
	if s.Mapping != "" {
		fmt.Fprintf(tw, "  mapping\t%s\n", s.Mapping)
	}
	fmt.Fprintf(tw, "  owner\t%s\n", s.PrincipalID)
	_ = tw.Flush()
}

func (a *app) sourceListCmd(t *envTarget) *cobra.Command {
	return envListCmd(a, t, &cobra.Command{
		Use:     "list",
		Short:   "List the environment's provider sources",
		Example: "  bridge source list\n  bridge source list --json | jq -r '.[] | select(.disabled|not) | .ingress_url'",
	}, "sources", func(tg *target) string { return tg.env("/provider-sources?limit=100") },
		"no provider sources", "SOURCE\tSTATE\tPROVIDER\tKIND\tNAME", func(s client.Source) []string {
			state := "enabled"
			if s.Disabled {
				state = "disabled"
			}
			return []string{s.ID, state, s.Provider, s.Kind, s.Name}
		})
}

// sourceGetCmd is get, or disable (for good).
func (a *app) sourceGetCmd(t *envTarget, disable bool) *cobra.Command {
	use, short, example := "get <source-id>", "Show a provider source", "  bridge source get <source-id> --json | jq -r .ingress_url"
	if disable {
		use, short, example = "disable <source-id>", "Disable a provider source for good (its ingress answers 404; pending receipts are blocked)", "  bridge source disable <source-id>"
	}
	return envOneCmd(a, t, &cobra.Command{Use: use, Short: short, Example: example, Args: cobra.ExactArgs(1)}, "source",
		func(ctx context.Context, tg *target, args []string) (client.Source, error) {
			if disable {
				return tg.api().DisableSource(ctx, tg.e(), args[0])
			}
			return tg.api().Source(ctx, tg.e(), args[0])
		}, func(tg *target, s client.Source) error {
			if disable {
				fmt.Fprintf(a.out, "Source %s is disabled\n", s.ID)
				return nil
			}
			a.printSource(tg, s)
			return nil
		})
}
