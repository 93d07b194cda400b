package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbridge/bridge/client"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

// resolutionKinds are the decisions an operator can take on an incident.
var resolutionKinds = []string{"retry_safe", "accept_reconciled_result", "terminate"}

func (a *app) incidentCmd() *cobra.Command {
	var t envTarget
	cmd := &cobra.Command{
		Use:     "incident",
		Aliases: []string{"incidents"},
		Short:   "List and resolve the incidents that stop runs",
		Long: `A run stops (status suspended) when a step cannot go on by itself: its
retries are exhausted, its deadline passed, or the outcome of a call that has
side effects is unknown. An operator decides, once per incident:

  retry_safe                 try the step again (only when retry_safe is true)
  accept_reconciled_result   complete the step with the output you checked
                             elsewhere (--output, with --evidence)
  terminate                  cancel the run

The tenant, project and environment default as for 'bridge run'.

Exit codes: 0 ok, 1 failure (the API's problem code is shown), 2 usage,
3 daemon not running.`,
		Example: `  bridge incident list
  bridge incident list --run <run-id> --status resolved
  bridge incident resolve <incident-id> --kind terminate --reason "order withdrawn"`,
	}
	t.add(cmd, true)
	cmd.AddCommand(a.incidentListCmd(&t), a.incidentResolveCmd(&t))
	return cmd
}

func (a *app) incidentListCmd(t *envTarget) *cobra.Command {
	var status, run string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List incidents: active, resolved, or of one run",
		Long: `Lists the incidents of the environment (GET E/incidents) in id order, or of
one run (--run: GET E/runs/{run}/incidents) in the order they opened.`,
		Example: `  bridge incident list
  bridge incident list --status active --json | jq -r '.[].id'
  bridge incident list --run <run-id>`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "" && status != "active" && status != "resolved" {
				return withCode(ExitUsage, fmt.Errorf("--status must be active or resolved"))
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			incs, err := listIncidents(ctx, tg, status, run)
			if err != nil {
				return err
			}
			return printTable(a, incs, asJSON, "no incidents", "INCIDENT\tRUN\tSTEP\tCODE\tSTATUS\tRETRY SAFE\tOPENED\tERROR", func(i client.Incident) []string {
				st := i.Status
				if i.Resolution != nil {
					st += " (" + string(i.Resolution.Kind) + ")"
				}
				return []string{i.ID, i.RunID, i.Instance, i.Code, st, yesNo(i.RetrySafe), i.OpenedAt.Local().Format(timeLayout), errorText(i.Error)}
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only active or resolved incidents")
	cmd.Flags().StringVar(&run, "run", "", "only this run's incidents")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the incidents as a JSON array")
	return cmd
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// listIncidents reads the incidents of the environment, or of run, with
// status ("" for both).
func listIncidents(ctx context.Context, tg *target, status, run string) ([]client.Incident, error) {
	if run == "" {
		q := url.Values{"limit": {"100"}}
		if status != "" {
			q.Set("status", status)
		}
		return collectPages[client.Incident](ctx, tg.s, tg.env("/incidents?"+q.Encode()), false)
	}
	var incs []client.Incident
	if err := tg.call(ctx, http.MethodGet, tg.env("/runs/"+url.PathEscape(run)+"/incidents"), nil, nil, &incs); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(incs, func(i client.Incident) bool { return status != "" && i.Status != status }), nil
}

// findIncident reads an incident of the environment.
func findIncident(ctx context.Context, tg *target, id string) (client.Incident, error) {
	for _, status := range []string{"active", "resolved"} {
		incs, err := listIncidents(ctx, tg, status, "")
		if err != nil {
			return client.Incident{}, err
		}
		for _, i := range incs {
			if i.ID == id {
				return i, nil
			}
		}
	}
	return client.Incident{}, fmt.Errorf("environment %s has no incident %s (see 'bridge incident list')", tg.ids.environment, id)
}

func (a *app) incidentResolveCmd(t *envTarget) *cobra.Command {
	var req client.ResolveRequest
	var output string
	var revision int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resolve <incident-id> --kind <kind> --reason <text>",
		Short: "Resolve an active incident: retry the step, accept a result, or terminate the run",
		Long: `Resolves an incident (POST E/incidents/{incident}/resolve) at its current
revision, read first (or --revision), with a new receipt id (or --receipt: the
same receipt, body and revision answer the committed result, so a repeated
command is safe).

--kind retry_safe tries the step again (only when the incident says retry
safe); accept_reconciled_result completes the step with --output, which must
match the step's output schema, and needs --evidence (where you checked it);
terminate cancels the run.`,
		Example: `  bridge incident resolve <incident-id> --kind retry_safe --reason "the service is back"
  bridge incident resolve <incident-id> --kind accept_reconciled_result --reason "charged by phone" \
      --output '{"chargeId":"ch_manual_1"}' --evidence "bank statement 2026-11"
  bridge incident resolve <incident-id> --kind terminate --reason "order withdrawn" --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(resolutionKinds, req.Kind) {
				return withCode(ExitUsage, fmt.Errorf("--kind must be one of %s", strings.Join(resolutionKinds, ", ")))
			}
			if output != "" {
				var err error
				if req.Output, err = jsonArg("output", output); err != nil {
					return err
				}
			}
			if req.ReceiptID == "" {
				req.ReceiptID = uuid.NewString()
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			id := args[0]
			if revision == 0 {
				inc, err := findIncident(ctx, tg, id)
				if err != nil {
					return err
				}
				if r := inc.Resolution; inc.Status != "active" && r != nil {
					return fmt.Errorf("incident %s is already resolved (%s at %s: %s)", id, r.Kind, r.ResolvedAt.Local().Format(timeLayout), r.Reason)
				}
				revision = inc.Revision
			}
			hdr := map[string]string{"If-Match": strconv.Quote(strconv.Itoa(revision))}
			res, err := tg.api().ResolveIncident(ctx, tg.e(), id, hdr, req)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.out, "Resolved incident %s (%s): run %s is %s\n", res.Incident.ID, req.Kind, res.Run.ID, runStateText(res.Run))
			if m := res.Run.ExternalEffectsMayContinue; m != nil && *m {
				fmt.Fprintln(a.out, "Work already issued may still finish.")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Kind, "kind", "", "retry_safe, accept_reconciled_result or terminate; required")
	cmd.Flags().StringVar(&req.Reason, "reason", "", "why (recorded with the resolution); required")
	cmd.Flags().StringVar(&output, "output", "", "accept_reconciled_result: the step output, JSON or @file.json")
	cmd.Flags().StringVar(&req.EvidenceReference, "evidence", "", "accept_reconciled_result: where the result was checked (ticket, statement, ...)")
	cmd.Flags().StringVar(&req.ReceiptID, "receipt", "", "receipt id (a UUID; default: a new one)")
	cmd.Flags().IntVar(&revision, "revision", 0, "the incident's revision to resolve at (default: read it)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the resolved incident and its run as JSON")
	requireFlags(cmd, "kind", "reason")
	return cmd
}
