package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbridge/bridge/client"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

// secretEnv holds a trigger's signing secret for 'bridge trigger send', so
// that it need not be typed on a command line.
const secretEnv = "BRIDGE_TRIGGER_SECRET"

func (a *app) triggerCmd() *cobra.Command {
	var t envTarget
	cmd := &cobra.Command{
		Use:     "trigger",
		Aliases: []string{"triggers"},
		Short:   "Start runs from signed webhooks: create, list, replace and test triggers",
		Long: `A webhook trigger starts a run of an activation for each accepted delivery to
its URL (POST /webhooks/<id> on the services listener). Deliveries are signed
with the Standard Webhooks scheme (webhook-id, webhook-timestamp and
webhook-signature headers, a whsec_ secret), so any Standard Webhooks sender
library works unmodified; a bearer token is never accepted there. A replayed
webhook-id starts no second run.

The secret is shown once, by 'create' or 'replace': store it with the sender.
Triggers never change: 'replace' makes a new one (new URL and secret) and
disables the old one. Runs start as the trigger's creator.

The tenant, project and environment default as for 'bridge run'.

Exit codes: 0 ok, 1 failure (the API's problem code is shown), 2 usage,
3 daemon not running.`,
		Example: `  bridge trigger create acme/flow --name orders
  bridge trigger create acme/flow --mapping '{"name": input.body.user.login}'
  BRIDGE_TRIGGER_SECRET=whsec_... bridge trigger send <trigger-id> --body '{"name":"Ada"}'`,
	}
	t.add(cmd, true)
	cmd.AddCommand(a.triggerCreateCmd(&t, false), a.triggerCreateCmd(&t, true), a.triggerListCmd(&t), a.triggerGetCmd(&t),
		a.triggerDisableCmd(&t), a.triggerSendCmd(&t))
	return cmd
}

// triggerCreateCmd is create, or replace <trigger-id> with the same flags.
func (a *app) triggerCreateCmd(t *envTarget, replace bool) *cobra.Command {
	var req client.TriggerRequest
	var activationID string
	var asJSON bool
	use, short, nargs := "create <workflow-id[@version]> | --activation <id>", "Create a trigger and print its URL and secret (shown once)", cobra.MaximumNArgs(1)
	example := `  bridge trigger create acme/flow --name orders
  bridge trigger create acme/flow --headers X-Mode --mapping '{"name": input.body.user, "mode": input.headers["x-mode"]}' --json`
	if replace {
		use, short, nargs = "replace <trigger-id> <workflow-id[@version]> | --activation <id>", "Replace a trigger by a new one (new URL and secret); the old one is disabled", cobra.RangeArgs(1, 2)
		example = "  bridge trigger replace <trigger-id> acme/flow@2 --name orders"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: `The trigger starts runs of the active activation of a workflow id, or of the
activation given with --activation. The input of a run is the delivery's body
(a JSON object), or what --mapping makes of it: a workflow expression over
input.body (the parsed body) and input.headers (the headers named by
--headers, lower-case). You need trigger.manage and run.start.`,
		Example: example,
		Args:    nargs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var old string
			if replace {
				old, args = args[0], args[1:]
			}
			if (len(args) == 1) == (activationID != "") {
				return withCode(ExitUsage, errors.New("give a workflow id or --activation, not both"))
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			req.ActivationID = activationID
			if len(args) == 1 {
				x, err := activeActivation(ctx, tg, args[0])
				if err != nil {
					return err
				}
				req.ActivationID = x.ID
			}
			path, hdr := tg.env("/triggers"), map[string]string{}
			if replace {
				path, hdr["If-Match"] = tg.env("/triggers/"+url.PathEscape(old)+"/replace"), "1"
			}
			var ct client.CreatedTrigger
			if err := tg.call(ctx, http.MethodPost, path, hdr, req, &ct); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(ct)
			}
			a.printTrigger(tg, ct.Trigger, ct.Secret)
			fmt.Fprintln(a.out, "Store the secret with the sender now: it is not shown again.")
			return nil
		},
	}
	cmd.Flags().StringVar(&activationID, "activation", "", "activation id (instead of a workflow id)")
	cmd.Flags().StringVar(&req.Name, "name", "", "display name")
	cmd.Flags().StringVar(&req.Mapping, "mapping", "", "workflow expression over input.body and input.headers giving the run input (default: the body)")
	cmd.Flags().StringSliceVar(&req.Headers, "headers", nil, "request headers the mapping may read (comma-separated)")
	cmd.Flags().IntVar(&req.Tolerance, "tolerance", 0, "accepted webhook-timestamp skew in seconds, 1..3600 (default 300)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the trigger and its secret as JSON")
	return cmd
}

// printTrigger writes a trigger for people with its full URL (and its
// secret, when just created).
func (a *app) printTrigger(tg *target, tr client.Trigger, secret string) {
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Trigger %s %s\n", tr.ID, tr.Status)
	if tr.Name != "" {
		fmt.Fprintf(tw, "  name\t%s\n", tr.Name)
	}
	fmt.Fprintf(tw, "  url\t%s\n", tg.s.c.state.ServicesURL+tr.URL)
	fmt.Fprintf(tw, "  activation\t%s\n", tr.ActivationID)
	if tr.Mapping != "" {
		fmt.Fprintf(tw, "  mapping\t%s\n", tr.Mapping)
	}
	if len(tr.Headers) > 0 {
		fmt.Fprintf(tw, "  headers\t%s\n", strings.Join(tr.Headers, ", "))
	}
	fmt.Fprintf(tw, "  tolerance\t%ds\n", tr.Tolerance)
	fmt.Fprintf(tw, "  runs as\t%s\n", tr.PrincipalID)
	if tr.ReplacedBy != nil {
		fmt.Fprintf(tw, "  replaced by\t%s\n", *tr.ReplacedBy)
	}
	if secret != "" {
		fmt.Fprintf(tw, "  secret\t%s\n", secret)
	}
	_ = tw.Flush()
}

func (a *app) triggerListCmd(t *envTarget) *cobra.Command {
	return envListCmd(a, t, &cobra.Command{
		Use:     "list",
		Short:   "List the environment's triggers (never their secrets)",
		Example: "  bridge trigger list\n  bridge trigger list --json | jq -r '.[] | select(.status==\"enabled\") | .url'",
	}, "triggers", func(tg *target) string { return tg.env("/triggers?limit=100") },
		"no triggers", "TRIGGER\tSTATUS\tNAME\tACTIVATION\tCREATED", func(tr client.Trigger) []string {
			return []string{tr.ID, tr.Status, tr.Name, tr.ActivationID, tr.CreatedAt.Local().Format(timeLayout)}
		})
}

func (a *app) triggerGetCmd(t *envTarget) *cobra.Command {
	return envOneCmd(a, t, &cobra.Command{Use: "get <trigger-id>", Short: "Show a trigger (never its secret)",
		Example: "  bridge trigger get <trigger-id> --json | jq -r .url", Args: cobra.ExactArgs(1)}, "trigger",
		func(ctx context.Context, tg *target, args []string) (client.Trigger, error) {
			return tg.api().Trigger(ctx, tg.e(), args[0])
		}, func(tg *target, tr client.Trigger) error { a.printTrigger(tg, tr, ""); return nil })
}

func (a *app) triggerDisableCmd(t *envTarget) *cobra.Command {
	return envOneCmd(a, t, &cobra.Command{Use: "disable <trigger-id>", Short: "Disable a trigger for good (its URL answers 404 from then on)",
		Example: "  bridge trigger disable <trigger-id>", Args: cobra.ExactArgs(1)}, "trigger",
		func(ctx context.Context, tg *target, args []string) (client.Trigger, error) {
			return tg.api().DisableTrigger(ctx, tg.e(), args[0])
		}, func(_ *target, tr client.Trigger) error {
			_, err := fmt.Fprintf(a.out, "Trigger %s is disabled\n", tr.ID)
			return err
		})
}

func (a *app) triggerSendCmd(_ *envTarget) *cobra.Command {
	var secret, body, id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "send <trigger-id> --body <json>",
		Short: "Sign and deliver a test payload to a trigger, as a Standard Webhooks sender would",
		Long: `Signs --body with the trigger's secret (--secret, else $` + secretEnv + `) by the
Standard Webhooks scheme, with a new webhook-id (or --id: sending the same id
again starts no second run) and the current time, posts it to the trigger's URL
on the running daemon and prints the run it started. Needs no sign-in: the
signature is the only credential.`,
		Example: `  export BRIDGE_TRIGGER_SECRET=whsec_...
  bridge trigger send <trigger-id> --body '{"name":"Ada"}'
  bridge trigger send <trigger-id> --body @payload.json --id order-1001 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var d client.TriggerDelivery
			if _, err := a.sendSigned(cmd.Context(), "/webhooks/"+url.PathEscape(args[0]), secret, body, id, &d); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(d)
			}
			if d.Replayed {
				fmt.Fprintf(a.out, "Delivery %s was accepted before: run %s (no new run)\n", d.WebhookID, d.RunID)
				return nil
			}
			fmt.Fprintf(a.out, "Delivery %s accepted: run %s started\n", d.WebhookID, d.RunID)
			return nil
		},
	}
	cmd.Flags().StringVar(&secret, "secret", "", "the trigger's whsec_ secret (default $"+secretEnv+")")
	cmd.Flags().StringVar(&body, "body", "", "the payload: JSON, or @file.json; required")
	cmd.Flags().StringVar(&id, "id", "", "webhook-id (default: a new one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the delivery's answer as JSON")
	requireFlags(cmd, "body")
	return cmd
}

// sendSigned signs body (JSON or @file) with secret (else $BRIDGE_TRIGGER_SECRET)
// by the Standard Webhooks scheme under webhook-id id (a new one when "")
// and the current time, posts it to path on the services listener and
// decodes the answer into out; it answers the webhook-id.
func (a *app) sendSigned(ctx context.Context, path, secret, body, id string, out any) (string, error) {
	if secret == "" {
		secret = os.Getenv(secretEnv)
	}
	if !strings.HasPrefix(secret, "whsec_") {
		return "", withCode(ExitUsage, fmt.Errorf("give the whsec_ secret with --secret or $%s", secretEnv))
	}
	raw, err := jsonArg("body", body)
	if err != nil {
		return "", err
	}
	// Compact, as the request body will be: the signature covers the
	// exact bytes sent.
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", withCode(ExitUsage, fmt.Errorf("--body: %w", err))
	}
	payload := buf.Bytes()
	if id == "" {
		id = "msg_" + uuid.NewString()
	}
	now := time.Now()
	sig, err := client.SignWebhook(secret, id, now, payload)
	if err != nil {
		return "", withCode(ExitUsage, err)
	}
	c, err := a.daemonClient(ctx)
	if err != nil {
		return "", err
	}
	hdr := map[string]string{client.HeaderWebhookID: id, client.HeaderWebhookTimestamp: strconv.FormatInt(now.Unix(), 10),
		client.HeaderWebhookSignature: sig}
	_, err = c.api(c.state.ServicesURL).WithToken("").Do(ctx, http.MethodPost, path, hdr, rawJSON(payload), out)
	return id, err
}

// rawJSON is a compact JSON body, sent as is.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }
