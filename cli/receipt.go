package cli

import (
	"context"
	"fmt"
	"net/url"
	"text/tabwriter"

	"github.com/agentbridge/bridge/client"

	"github.com/spf13/cobra"
)

func (a *app) receiptCmd() *cobra.Command {
	var t envTarget
	cmd := &cobra.Command{
		Use:     "receipt",
		Aliases: []string{"receipts"},
		Short:   "Provider receipts: each event a provider source admitted, and what became of it",
		Long: `A receipt is stored for each event a provider source admits, before the
provider is acknowledged. The dispatcher then moves it from pending to
dispatched (run_id, and signal_id for a signal), ignored (an event kind that
is not dispatchable), blocked (the source was disabled or its owner lost a
capability) or failed (the target ended, or the mapped value did not fit its
schema). A transient failure keeps it pending for 30 seconds. 'retry' makes a
blocked or failed receipt pending again with the same event identity. The
event's payload is never shown.

Exit codes: 0 ok, 1 failure (the API's problem code is shown), 2 usage,
3 daemon not running.`,
		Example: `  bridge receipt list --source <source-id>
  bridge receipt list --status failed --json
  bridge receipt retry <receipt-id>`,
	}
	t.add(cmd, true)
	cmd.AddCommand(a.receiptListCmd(&t), a.receiptOneCmd(&t, false), a.receiptOneCmd(&t, true))
	return cmd
}

func (a *app) receiptListCmd(t *envTarget) *cobra.Command {
	var src, status string
	cmd := envListCmd(a, t, &cobra.Command{
		Use:     "list",
		Short:   "List receipts in admission order",
		Example: "  bridge receipt list\n  bridge receipt list --source <source-id> --status dispatched --json | jq -r '.[].run_id'",
	}, "receipts", func(tg *target) string {
		q := url.Values{"limit": {"100"}}
		if src != "" {
			q.Set("source_id", src)
		}
		if status != "" {
			q.Set("status", status)
		}
		return tg.env("/provider-receipts?" + q.Encode())
	}, "no receipts", "RECEIPT\tSTATUS\tREASON\tKIND\tEVENT\tRUN", func(r client.Receipt) []string {
		return []string{r.ID, r.Status, orDash(r.Reason), r.EventKind, r.EventID, orDash(r.RunID)}
	})
	cmd.Flags().StringVar(&src, "source", "", "only this source's receipts")
	cmd.Flags().StringVar(&status, "status", "", "pending, dispatched, ignored, blocked or failed")
	return cmd
}

// orDash shows an absent value as "-".
func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// receiptOneCmd is get, or retry.
func (a *app) receiptOneCmd(t *envTarget, retry bool) *cobra.Command {
	use, short, example := "get <receipt-id>", "Show a receipt (never its payload)", "  bridge receipt get <receipt-id> --json | jq -r .run_id"
	if retry {
		use, short, example = "retry <receipt-id>", "Make a blocked or failed receipt pending again (same event identity)", "  bridge receipt retry <receipt-id>"
	}
	return envOneCmd(a, t, &cobra.Command{Use: use, Short: short, Example: example, Args: cobra.ExactArgs(1)}, "receipt",
		func(ctx context.Context, tg *target, args []string) (client.Receipt, error) {
			if retry {
				return tg.api().RetryReceipt(ctx, tg.e(), args[0])
			}
			return tg.api().Receipt(ctx, tg.e(), args[0])
		}, func(_ *target, r client.Receipt) error {
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "Receipt %s %s\n", r.ID, r.Status)
			fmt.Fprintf(tw, "  source\t%s\n", r.SourceID)
			fmt.Fprintf(tw, "  event\t%s %s\n", r.EventKind, r.EventID)
			fmt.Fprintf(tw, "  reason\t%s\n", orDash(r.Reason))
			fmt.Fprintf(tw, "  attempts\t%d\n", r.Attempts)
			fmt.Fprintf(tw, "  run\t%s\n", orDash(r.RunID))
			if r.SignalID != nil {
				fmt.Fprintf(tw, "  signal\t%s\n", *r.SignalID)
			}
			fmt.Fprintf(tw, "  received\t%s\n", r.ReceivedAt.Local().Format(timeLayout))
			return tw.Flush()
		})
}
