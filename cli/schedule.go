package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/agentbridge/bridge/client"

	"github.com/spf13/cobra"
)

// scheduleTimeLayout shows schedule times in UTC, the calendars' only zone.
const scheduleTimeLayout = "2006-01-02 15:04 UTC"

func scheduleTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(scheduleTimeLayout)
}

func (a *app) scheduleCmd() *cobra.Command {
	var t envTarget
	cmd := &cobra.Command{
		Use:     "schedule",
		Aliases: []string{"schedules"},
		Short:   "Start runs on a calendar: create, list and control schedules",
		Long: `A schedule starts a run of an activation at each occurrence of a five-field
UTC calendar: minute hour day-of-month month day-of-week (Sunday is 0), with
*, numbers, ranges (1-5), lists (1,15) and steps (*/15, 0-30/10); at least one
of the two day fields must be *. Names, macros (@daily), seconds, L, W, #, ?
and time zones are refused.

Only the occurrence of the current minute starts a run: occurrences missed
while the daemon was down or the schedule disabled are recorded as one skipped
range and never replayed. Runs start as the person who saved or enabled the
schedule; if that person loses run.start, or the activation is retired, the
schedule is blocked until it is saved or enabled again.

The tenant, project and environment default as for 'bridge run'.

Exit codes: 0 ok, 1 failure (the API's problem code is shown), 2 usage,
3 daemon not running.`,
		Example: `  bridge schedule create acme/report --cron '0 9 * * 1-5' --input '{"region":"eu"}'
  bridge schedule list
  bridge schedule occurrences <schedule-id>
  bridge schedule disable <schedule-id>`,
	}
	t.add(cmd, true)
	cmd.AddCommand(a.scheduleCreateCmd(&t), a.scheduleListCmd(&t), a.scheduleGetCmd(&t), a.scheduleOccurrencesCmd(&t),
		a.scheduleChangeCmd(&t, "disable", "Stop a schedule from firing (its history is kept)"),
		a.scheduleChangeCmd(&t, "enable", "Enable a disabled or blocked schedule from the next minute on, as you"),
		a.scheduleChangeCmd(&t, "delete", "Delete a schedule (it stays readable as a tombstone)"))
	return cmd
}

func (a *app) scheduleCreateCmd(t *envTarget) *cobra.Command {
	var in inputFlags
	var activationID, cron, replace string
	var revision int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create <workflow-id[@version]> | --activation <id> --cron <calendar>",
		Short: "Create (or replace) a schedule and print its next five due times",
		Long: `Creates a schedule (POST E/schedules) that starts runs of the active
activation of a workflow id, or of the activation given with --activation, with
the input of --input and --set (checked against the workflow's input schema
now). You become the schedule's execution principal: you need trigger.manage
and run.start in the environment.

--replace <schedule-id> saves a new revision of an existing schedule instead,
at its current revision (read first, or --revision).`,
		Example: `  bridge schedule create acme/report --cron '0 9 * * 1-5'
  bridge schedule create acme/report@2 --cron '*/15 * * * *' --set region=eu --json
  bridge schedule create acme/report --cron '30 8 * * *' --replace <schedule-id>`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (activationID != "") {
				return withCode(ExitUsage, errors.New("give a workflow id or --activation, not both"))
			}
			input, err := in.build(nil)
			if err != nil {
				return err
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			act := activationID
			if len(args) == 1 {
				x, err := activeActivation(ctx, tg, args[0])
				if err != nil {
					return err
				}
				act = x.ID
			}
			req := client.ScheduleRequest{Cron: cron, ActivationID: act, Input: input, ID: replace}
			hdr := map[string]string{}
			if replace != "" {
				if revision == 0 {
					cur, err := getSchedule(ctx, tg, replace)
					if err != nil {
						return err
					}
					revision = int(cur.Revision)
				}
				hdr["If-Match"] = strconv.Quote(strconv.Itoa(revision))
			}
			u, err := tg.api().SaveSchedule(ctx, tg.e(), hdr, req)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(u)
			}
			a.printSchedule(ctx, tg, u.Schedule)
			fmt.Fprintln(a.out, "Next due times:")
			for _, at := range u.Upcoming {
				fmt.Fprintf(a.out, "  %s\n", at.UTC().Format(scheduleTimeLayout))
			}
			return nil
		},
	}
	in.add(cmd, "run input: a JSON object, or @file.json")
	cmd.Flags().StringVar(&activationID, "activation", "", "activation id to schedule (instead of a workflow id)")
	cmd.Flags().StringVar(&cron, "cron", "", "five-field UTC calendar, e.g. '0 9 * * 1-5'; required")
	cmd.Flags().StringVar(&replace, "replace", "", "save a new revision of this schedule instead of creating one")
	cmd.Flags().IntVar(&revision, "revision", 0, "with --replace: the revision to replace (default: read it)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the schedule and its next due times as JSON")
	requireFlags(cmd, "cron")
	return cmd
}

// getSchedule reads a schedule of the environment.
func getSchedule(ctx context.Context, tg *target, id string) (client.Schedule, error) {
	return tg.api().Schedule(ctx, tg.e(), id)
}

// printSchedule writes a schedule for people, naming its workflow when the
// activation can be read.
func (a *app) printSchedule(ctx context.Context, tg *target, s client.Schedule) {
	label := "activation " + s.ActivationID
	if x, err := tg.api().Activation(ctx, tg.e(), s.ActivationID); err == nil {
		label = activationLabel(x)
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Schedule %s %s (revision %d)\n", s.ID, s.Status, s.Revision)
	fmt.Fprintf(tw, "  calendar\t%s (UTC)\n", s.Cron)
	fmt.Fprintf(tw, "  workflow\t%s\n", label)
	fmt.Fprintf(tw, "  input\t%s\n", compactJSON(s.Input))
	fmt.Fprintf(tw, "  next due\t%s\n", scheduleTime(s.NextDueAt))
	fmt.Fprintf(tw, "  runs as\t%s\n", s.PrincipalID)
	if s.BlockedReason != nil {
		fmt.Fprintf(tw, "  blocked\t%s (save or enable it again to rebind)\n", *s.BlockedReason)
	}
	_ = tw.Flush()
}

func (a *app) scheduleListCmd(t *envTarget) *cobra.Command {
	return envListCmd(a, t, &cobra.Command{
		Use:     "list",
		Short:   "List the environment's schedules, deleted ones included",
		Example: "  bridge schedule list\n  bridge schedule list --json | jq -r '.[] | select(.status==\"blocked\") | .id'",
	}, "schedules", func(tg *target) string { return tg.env("/schedules?limit=100") },
		"no schedules", "SCHEDULE\tSTATUS\tCALENDAR (UTC)\tNEXT DUE\tACTIVATION\tREVISION", func(s client.Schedule) []string {
			st := s.Status
			if s.BlockedReason != nil {
				st += " (" + *s.BlockedReason + ")"
			}
			return []string{s.ID, st, s.Cron, scheduleTime(s.NextDueAt), s.ActivationID, strconv.FormatInt(s.Revision, 10)}
		})
}

func (a *app) scheduleGetCmd(t *envTarget) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "get <schedule-id>",
		Short:   "Show a schedule",
		Example: "  bridge schedule get <schedule-id>\n  bridge schedule get <schedule-id> --json | jq -r .next_due_at",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			s, err := getSchedule(ctx, tg, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(s)
			}
			a.printSchedule(ctx, tg, s)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the schedule as JSON")
	return cmd
}

func (a *app) scheduleOccurrencesCmd(t *envTarget) *cobra.Command {
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "occurrences <schedule-id>",
		Short: "List a schedule's started occurrences and skipped ranges, newest first",
		Long: `Lists what the scheduler did at each occurrence (GET E/schedules/{id}/occurrences):
a started occurrence names its run; a skipped range spans occurrences missed
while the daemon was down (they are not replayed).`,
		Example: "  bridge schedule occurrences <schedule-id> --limit 10",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > 100 {
				return withCode(ExitUsage, errors.New("--limit must be from 1 to 100"))
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			var page struct {
				Items []client.Occurrence `json:"items"`
			}
			path := tg.env("/schedules/" + url.PathEscape(args[0]) + "/occurrences?limit=" + strconv.Itoa(limit))
			if err := tg.call(ctx, http.MethodGet, path, nil, nil, &page); err != nil {
				return err
			}
			return printTable(a, page.Items, asJSON, "no occurrences yet", "KIND\tFROM\tTO\tRUN\tREVISION\tOBSERVED", func(o client.Occurrence) []string {
				run := "-"
				if o.RunID != nil {
					run = *o.RunID
				}
				return []string{o.Kind, scheduleTime(&o.From), scheduleTime(&o.To), run, strconv.FormatInt(o.Revision, 10),
					o.ObservedAt.Local().Format(timeLayout)}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "how many, 1 to 100")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the occurrences as a JSON array")
	return cmd
}

// scheduleChangeCmd is disable, enable or delete: POST
// E/schedules/{id}/<action> at the current revision (read first, or
// --revision).
func (a *app) scheduleChangeCmd(t *envTarget, action, short string) *cobra.Command {
	var revision int
	var asJSON bool
	cmd := &cobra.Command{
		Use:     action + " <schedule-id>",
		Short:   short,
		Example: fmt.Sprintf("  bridge schedule %s <schedule-id>\n  bridge schedule %s <schedule-id> --revision 2 --json", action, action),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			id := args[0]
			if revision == 0 {
				cur, err := getSchedule(ctx, tg, id)
				if err != nil {
					return err
				}
				revision = int(cur.Revision)
			}
			hdr := map[string]string{"If-Match": strconv.Quote(strconv.Itoa(revision))}
			s, err := tg.api().ScheduleAction(ctx, tg.e(), id, action, hdr)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(s)
			}
			fmt.Fprintf(a.out, "Schedule %s is %s (revision %d)", s.ID, s.Status, s.Revision)
			if s.NextDueAt != nil {
				fmt.Fprintf(a.out, "; next due %s", scheduleTime(s.NextDueAt))
			}
			fmt.Fprintln(a.out)
			return nil
		},
	}
	cmd.Flags().IntVar(&revision, "revision", 0, "the schedule's revision (default: read it)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the schedule as JSON")
	return cmd
}
