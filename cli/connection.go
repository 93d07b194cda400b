package cli

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/agentbridge/bridge/client"

	"github.com/spf13/cobra"
)

func (a *app) connectionCmd() *cobra.Command {
	var t envTarget
	cmd := &cobra.Command{
		Use:     "connection",
		Aliases: []string{"connections"},
		Short:   "Provider connections: the account settings and sealed secrets provider sources use",
		Long: `A connection holds the settings and secrets of one provider account (a Slack
app, a WhatsApp number, a Telegram bot, a GitHub webhook). Connections never
change: each change is a new revision with its own id, and a provider source
stays bound to the revision it was created with. Secrets are sealed at rest and
never shown again, not even by 'create'.

Providers and their keys (see 'bridge source packages'):
  slack     config account_id (team id), api_app_id   secrets signing_secret
  whatsapp  config account_id (phone_number_id), business_account_id
            secrets app_secret, verify_token
  telegram  config bot_username                        secrets secret_token
  github    config account_id (owner login)             secrets webhook_secret

Needs connection.manage (create, list); connection.bind also reads one.
Exit codes: 0 ok, 1 failure (the API's problem code is shown), 2 usage,
3 daemon not running.`,
		Example: `  bridge connection create slack --name acme-workspace --config account_id=T0123 --secret-env signing_secret=SLACK_SIGNING_SECRET
  bridge connection list
  bridge connection get <connection-id> --json`,
	}
	t.add(cmd, true)
	cmd.AddCommand(a.connectionCreateCmd(&t), a.connectionListCmd(&t), a.connectionGetCmd(&t))
	return cmd
}

// keyValues parses KEY=VALUE flags into m; with env the value names an
// environment variable, else a value "@file" is read from the file.
func keyValues(flag string, in []string, m map[string]string, env bool) error {
	for _, kv := range in {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return withCode(ExitUsage, fmt.Errorf("--%s %q: want KEY=VALUE", flag, kv))
		}
		switch {
		case env:
			val, ok := os.LookupEnv(v)
			if !ok {
				return withCode(ExitUsage, fmt.Errorf("--%s %s: the environment variable %s is not set", flag, k, v))
			}
			v = val
		case strings.HasPrefix(v, "@"):
			raw, err := os.ReadFile(v[1:])
			if err != nil {
				return withCode(ExitUsage, fmt.Errorf("--%s %s: %w", flag, k, err))
			}
			v = strings.TrimRight(string(raw), "\r\n")
		}
		m[k] = v
	}
	return nil
}

func (a *app) connectionCreateCmd(t *envTarget) *cobra.Command {
	var req client.ConnectionRequest
	var config, secrets, secretEnv []string
	var revise, key string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create <provider> --name <name> [--config k=v] [--secret k=v|k=@file] [--secret-env k=VAR]",
		Short: "Create a connection, or a new revision of one (--revision-of)",
		Long: `Creates a connection (revision 1), or with --revision-of a new revision of an
existing connection: the whole settings and secrets again. Prefer --secret-env
or --secret k=@file to keep secrets out of the shell history. With
--idempotency-key, repeating the command answers the revision created first.`,
		Example: `  bridge connection create slack --name acme --config account_id=T0123 --secret-env signing_secret=SLACK_SIGNING_SECRET
  bridge connection create telegram --name bot --secret secret_token=@tg-token.txt --json
  bridge connection create slack --revision-of <connection-id> --name acme --config account_id=T0123 --secret-env signing_secret=NEW_SECRET`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Provider, req.Config, req.Secrets = args[0], map[string]string{}, map[string]string{}
			if err := keyValues("config", config, req.Config, false); err != nil {
				return err
			}
			if err := keyValues("secret", secrets, req.Secrets, false); err != nil {
				return err
			}
			if err := keyValues("secret-env", secretEnv, req.Secrets, true); err != nil {
				return err
			}
			if len(req.Secrets) == 0 {
				return withCode(ExitUsage, errors.New("give the provider's secrets with --secret or --secret-env"))
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			path := tg.env("/connections")
			if revise != "" {
				path = tg.env("/connections/" + url.PathEscape(revise) + "/revisions")
			}
			hdr := map[string]string{}
			if key != "" {
				hdr["Idempotency-Key"] = key
			}
			var c client.Connection
			if err := tg.call(ctx, http.MethodPost, path, hdr, req, &c); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(c)
			}
			a.printConnection(c)
			fmt.Fprintln(a.out, "The secrets are sealed; they are never shown.")
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Name, "name", "", "display name (required)")
	cmd.Flags().StringArrayVar(&config, "config", nil, "a setting KEY=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&secrets, "secret", nil, "a secret KEY=VALUE or KEY=@file (repeatable)")
	cmd.Flags().StringArrayVar(&secretEnv, "secret-env", nil, "a secret KEY=ENV_VAR read from the environment (repeatable)")
	cmd.Flags().StringVar(&revise, "revision-of", "", "connection id: create its next revision")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key (optional)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the revision as JSON")
	requireFlags(cmd, "name")
	return cmd
}

// printConnection writes a connection revision for people.
func (a *app) printConnection(c client.Connection) {
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Connection %s revision %d\n", c.ConnectionID, c.Revision)
	fmt.Fprintf(tw, "  revision id\t%s\n", c.ID)
	fmt.Fprintf(tw, "  name\t%s\n", c.Name)
	fmt.Fprintf(tw, "  provider\t%s\n", c.Provider)
	keys := make([]string, 0, len(c.Config))
	for k := range c.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(tw, "  config %s\t%s\n", k, c.Config[k])
	}
	fmt.Fprintf(tw, "  secrets\t%s (sealed)\n", strings.Join(c.SecretKeys, ", "))
	_ = tw.Flush()
}

func (a *app) connectionListCmd(t *envTarget) *cobra.Command {
	return envListCmd(a, t, &cobra.Command{
		Use:     "list",
		Short:   "List the environment's connections (newest revision of each; never secrets)",
		Example: "  bridge connection list\n  bridge connection list --json | jq -r '.[] | select(.provider==\"slack\") | .id'",
	}, "connections", func(tg *target) string { return tg.env("/connections?limit=100") },
		"no connections", "CONNECTION\tREVISION\tREVISION ID\tPROVIDER\tNAME", func(c client.Connection) []string {
			return []string{c.ConnectionID, fmt.Sprint(c.Revision), c.ID, c.Provider, c.Name}
		})
}

func (a *app) connectionGetCmd(t *envTarget) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "get <connection-id|revision-id>",
		Short:   "Show a connection revision: a revision id, or a connection id for its newest revision",
		Example: "  bridge connection get <connection-id>\n  bridge connection get <revision-id> --json | jq .config",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			c, err := tg.api().Connection(ctx, tg.e(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(c)
			}
			a.printConnection(c)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the revision as JSON")
	return cmd
}
