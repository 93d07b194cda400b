package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentbridge/bridge/client"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

// humanStatuses are the statuses of a human task.
var humanStatuses = []string{"open", "claimed", "completed", "closed"}

func (a *app) humanCmd() *cobra.Command {
	var t envTarget
	cmd := &cobra.Command{
		Use:     "human",
		Aliases: []string{"human-task", "human-tasks"},
		Short:   "List, claim and complete the human tasks of runs",
		Long: `A human step of a run opens a task for people and waits until someone
completes it with one of its decisions (and data valid for its form); the run
then continues with that decision. A task is open, claimed (held by one
principal), completed, or closed (withdrawn: the step's deadline passed or
the run ended).

Anyone with human_task.complete in the environment claims an open task, and
its holder releases or completes it; reassign makes another principal the
holder. An open task is completed directly by one of its assignees (a
principal id, or user:<principal id>), or by anyone when it has none; others
claim it first ('complete --claim' does both).

Every change sends a new Idempotency-Key (or --idempotency-key: the same key
and values answer the first result again) and, with --revision, If-Match: a
task changed since is refused with PF-HUMAN-TASK-REVISION.

The tenant, project and environment default as for 'bridge run'.

Exit codes: 0 ok, 1 failure (the API's problem code is shown), 2 usage,
3 daemon not running.`,
		Example: `  bridge human list --status open
  bridge human list --run <run-id>
  bridge human complete <task-id> approve --data '{"note":"fine"}' --claim`,
	}
	t.add(cmd, true)
	cmd.AddCommand(a.humanListCmd(&t), a.humanShowCmd(&t), a.humanClaimCmd(&t), a.humanReleaseCmd(&t),
		a.humanReassignCmd(&t), a.humanCompleteCmd(&t))
	return cmd
}

func (a *app) humanListCmd(t *envTarget) *cobra.Command {
	var status, run, assignee string
	var mine, asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List human tasks, oldest first",
		Long: `Lists the human tasks of the environment (GET E/human-tasks), oldest first:
open, claimed, completed and closed ones unless --status says which. --assignee
keeps tasks with that assignee entry (a principal id also matches
user:<principal id>); --mine keeps the tasks assigned to you or claimed (or
last held) by you.`,
		Example: `  bridge human list
  bridge human list --status open --mine
  bridge human list --run <run-id> --json | jq -r '.[0].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "" && !slices.Contains(humanStatuses, status) {
				return withCode(ExitUsage, fmt.Errorf("--status must be one of %s", strings.Join(humanStatuses, ", ")))
			}
			if mine && assignee != "" {
				return withCode(ExitUsage, errors.New("give --mine or --assignee, not both"))
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			q := url.Values{"limit": {"100"}}
			for k, v := range map[string]string{"status": status, "run_id": run, "assignee": assignee} {
				if v != "" {
					q.Set(k, v)
				}
			}
			tasks, err := listHumanTasks(ctx, tg, q, mine)
			if err != nil {
				return err
			}
			return printTable(a, tasks, asJSON, "no human tasks", "ID\tSTATUS\tRUN\tNODE\tTITLE\tDECISIONS\tDEADLINE", func(h client.HumanTask) []string {
				deadline := ""
				if h.Deadline != nil {
					deadline = h.Deadline.Local().Format(timeLayout)
				}
				return []string{h.ID, humanStatusText(h), h.RunID, h.NodeID, h.Title, strings.Join(h.Decisions, ","), deadline}
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only tasks with this status: open, claimed, completed or closed")
	cmd.Flags().StringVar(&run, "run", "", "only this run's tasks")
	cmd.Flags().StringVar(&assignee, "assignee", "", "only tasks with this assignee entry (user:alice, group:finance, a principal id)")
	cmd.Flags().BoolVar(&mine, "mine", false, "only tasks assigned to you or claimed by you")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tasks as a JSON array")
	return cmd
}

// listHumanTasks reads the tasks matching q, oldest first; with mine,
// those assigned to the caller or claimed by the caller.
func listHumanTasks(ctx context.Context, tg *target, q url.Values, mine bool) ([]client.HumanTask, error) {
	queries := []url.Values{q}
	if mine {
		id, err := tg.api().Identity(ctx)
		if err != nil {
			return nil, err
		}
		assigned, claimed := maps.Clone(q), maps.Clone(q)
		assigned.Set("assignee", id.PrincipalID)
		claimed.Set("claimed_by", id.PrincipalID)
		queries = []url.Values{assigned, claimed}
	}
	var tasks []client.HumanTask
	for _, q := range queries {
		page, err := collectPages[client.HumanTask](ctx, tg.s, tg.env("/human-tasks?"+q.Encode()), false)
		if err != nil {
			return nil, err
		}
		for _, h := range page {
			if !slices.ContainsFunc(tasks, func(x client.HumanTask) bool { return x.ID == h.ID }) {
				tasks = append(tasks, h)
			}
		}
	}
	slices.SortStableFunc(tasks, func(x, y client.HumanTask) int {
		return cmp.Or(x.OpenedAt.Compare(y.OpenedAt), strings.Compare(x.ID, y.ID))
	})
	return tasks, nil
}

// humanStatusText is the status with the decision of a completed task or
// the reason of a closed one.
func humanStatusText(h client.HumanTask) string {
	switch {
	case h.Decision != "":
		return h.Status + " (" + h.Decision + ")"
	case h.CloseReason != "":
		return h.Status + " (" + h.CloseReason + ")"
	}
	return h.Status
}

func (a *app) humanShowCmd(t *envTarget) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "show <task-id>",
		Aliases: []string{"get"},
		Short:   "Show a human task: title, assignees, decisions, form, who holds it",
		Long: `Shows a human task (GET E/human-tasks/{id}): its run and step, title and
description, assignees, decisions and form (the JSON Schema of the data a
completion submits), who holds or completed it, and its revision (for
--revision). --json prints the API's HumanTask.`,
		Example: `  bridge human show <task-id>
  bridge human show <task-id> --json | jq .form`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			h, err := getHumanTask(ctx, tg, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(h)
			}
			a.printHumanTask(h)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the task as JSON")
	return cmd
}

// getHumanTask reads a human task of the target's environment.
func getHumanTask(ctx context.Context, tg *target, id string) (client.HumanTask, error) {
	return tg.api().HumanTask(ctx, tg.e(), id)
}

// printHumanTask writes a task for people.
func (a *app) printHumanTask(h client.HumanTask) {
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Human task %s %s\n", h.ID, humanStatusText(h))
	fmt.Fprintf(tw, "  title\t%s\n", h.Title)
	if h.Description != "" {
		fmt.Fprintf(tw, "  description\t%s\n", oneLine(h.Description))
	}
	step := h.NodeID
	if h.Instance != "" && h.Instance != h.NodeID {
		step += " (" + h.Instance + ")"
	}
	fmt.Fprintf(tw, "  run\t%s, step %s\n", h.RunID, step)
	assignees := "none (anyone may complete it)"
	if len(h.Assignees) > 0 {
		assignees = strings.Join(h.Assignees, ", ")
	}
	fmt.Fprintf(tw, "  assignees\t%s\n", assignees)
	fmt.Fprintf(tw, "  decisions\t%s\n", strings.Join(h.Decisions, ", "))
	if len(h.Form) > 0 {
		fmt.Fprintf(tw, "  form\t%s\n", compactJSON(h.Form))
	}
	if h.ClaimedBy != "" {
		at := ""
		if h.ClaimedAt != nil {
			at = " at " + h.ClaimedAt.Local().Format(timeLayout)
		}
		fmt.Fprintf(tw, "  claimed by\t%s%s\n", h.ClaimedBy, at)
	}
	if h.CompletedBy != "" {
		fmt.Fprintf(tw, "  completed by\t%s\n", h.CompletedBy)
	}
	if len(h.Data) > 0 {
		fmt.Fprintf(tw, "  data\t%s\n", compactJSON(h.Data))
	}
	fmt.Fprintf(tw, "  opened\t%s\n", h.OpenedAt.Local().Format(timeLayout))
	if h.Deadline != nil {
		fmt.Fprintf(tw, "  deadline\t%s\n", h.Deadline.Local().Format(timeLayout))
	}
	if h.ClosedAt != nil {
		fmt.Fprintf(tw, "  %s\t%s\n", h.Status, h.ClosedAt.Local().Format(timeLayout))
	}
	fmt.Fprintf(tw, "  revision\t%d\n", h.Revision)
	tw.Flush()
}

// humanFlags are the flags of the commands that change a task.
type humanFlags struct {
	key      string
	revision int64
	asJSON   bool
}

func (f *humanFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.key, "idempotency-key", "", "Idempotency-Key (default: a new one): repeating the command with the same key and values answers the first result")
	cmd.Flags().Int64Var(&f.revision, "revision", 0, "change the task only at this revision (If-Match; see 'bridge human show')")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the task as JSON")
}

func (f *humanFlags) check() error {
	if f.revision < 0 {
		return withCode(ExitUsage, fmt.Errorf("--revision must be 1 or more, got %d", f.revision))
	}
	return nil
}

// post sends POST E/human-tasks/{id}/verb with body and answers the task
// after the change.
func (f *humanFlags) post(ctx context.Context, tg *target, id, verb string, body any) (client.HumanTask, error) {
	hdr := map[string]string{client.HeaderIdempotencyKey: cmp.Or(f.key, uuid.NewString())}
	if f.revision > 0 {
		hdr["If-Match"] = strconv.Quote(strconv.FormatInt(f.revision, 10))
	}
	return tg.api().HumanTaskAction(ctx, tg.e(), id, verb, hdr, body)
}

// humanChangeCmd completes cmd, which carries the help text and takes the
// task id as its first argument: it POSTs body(args) to
// E/human-tasks/{id}/verb and prints done(task), or the task as JSON.
func (a *app) humanChangeCmd(t *envTarget, cmd *cobra.Command, verb string, body func(args []string) any, done func(client.HumanTask) string) *cobra.Command {
	var f humanFlags
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := f.check(); err != nil {
			return err
		}
		ctx, tg, err := t.openEnv(cmd, a)
		if err != nil {
			return err
		}
		h, err := f.post(ctx, tg, args[0], verb, body(args))
		if err != nil {
			return err
		}
		if f.asJSON {
			return a.printJSON(h)
		}
		_, err = fmt.Fprintln(a.out, done(h))
		return err
	}
	f.add(cmd)
	return cmd
}

// humanLabel names a task in messages.
func humanLabel(h client.HumanTask) string {
	return fmt.Sprintf("human task %s (%s)", h.ID, h.Title)
}

func claimedText(h client.HumanTask) string {
	return fmt.Sprintf("Claimed %s: held by %s (revision %d)", humanLabel(h), h.ClaimedBy, h.Revision)
}

func (a *app) humanClaimCmd(t *envTarget) *cobra.Command {
	return a.humanChangeCmd(t, &cobra.Command{
		Use:   "claim <task-id>",
		Short: "Claim an open human task: you hold it until you complete or release it",
		Long: `Claims an open task (POST E/human-tasks/{id}/claim): you hold it, and only
you complete or release it. Claiming a task you hold changes nothing; a task
held by someone else is refused (PF-RUNTIME-STATE): its holder releases it,
or someone reassigns it.`,
		Example: `  bridge human claim <task-id>
  bridge human claim <task-id> --revision 1 --json`,
		Args: cobra.ExactArgs(1),
	}, "claim", func([]string) any { return nil }, claimedText)
}

func (a *app) humanReleaseCmd(t *envTarget) *cobra.Command {
	return a.humanChangeCmd(t, &cobra.Command{
		Use:   "release <task-id>",
		Short: "Give a claimed human task back: it is open again",
		Long: `Releases a task you hold (POST E/human-tasks/{id}/release): it is open again
for anyone to claim. An open task, or one held by someone else, is refused
(PF-RUNTIME-STATE).`,
		Example: `  bridge human release <task-id>`,
		Args:    cobra.ExactArgs(1),
	}, "release", func([]string) any { return nil }, func(h client.HumanTask) string {
		return fmt.Sprintf("Released %s: %s (revision %d)", humanLabel(h), h.Status, h.Revision)
	})
}

func (a *app) humanReassignCmd(t *envTarget) *cobra.Command {
	return a.humanChangeCmd(t, &cobra.Command{
		Use:   "reassign <task-id> <principal-id>",
		Short: "Make another principal the holder of a human task",
		Long: `Reassigns an open or claimed task (POST E/human-tasks/{id}/reassign): the
principal becomes its holder, as if it had claimed it. The principal must be
enabled and hold human_task.complete in the environment (PF-VALIDATION
otherwise); see 'bridge platform principal list' and 'bridge platform grant'.`,
		Example: `  bridge human reassign <task-id> <principal-id>`,
		Args:    cobra.ExactArgs(2),
	}, "reassign", func(args []string) any { return client.HumanReassignRequest{Assignee: args[1]} }, func(h client.HumanTask) string {
		return fmt.Sprintf("Reassigned %s: held by %s (revision %d)", humanLabel(h), h.ClaimedBy, h.Revision)
	})
}

func (a *app) humanCompleteCmd(t *envTarget) *cobra.Command {
	var f humanFlags
	var data string
	var claim bool
	var attach []string
	cmd := &cobra.Command{
		Use:   "complete <task-id> <decision> [--data JSON|@file] [--attach field=path] [--claim]",
		Short: "Complete a human task with a decision: the run continues",
		Long: `Completes a task (POST E/human-tasks/{id}/complete) with a decision, one of the
task's (see 'bridge human show'), and --data, which must be valid for its form
(JSON, or @file.json; absent is null). The run's human step continues with
{decision, data, completedBy} at once; on a paused run the completion is
checked now and applied when it resumes.

A claimed task is completed by its holder; an open task by one of its
assignees, or by anyone when it has none. With --claim, an open task is
claimed first, so one command approves.

--attach field=path uploads a file through the task's file routes (with a
progress bar) and puts its reference {file_id} into data.field: the form
marks such fields with x-file: true (see docs/workflow-language.md, "Files").`,
		Example: `  bridge human complete <task-id> approve --claim
  bridge human complete <task-id> reject --data '{"comment":"wrong address"}'
  bridge human complete <task-id> approve --data @review.json --idempotency-key approve-A-1001 --json
  bridge human complete <task-id> approve --attach scan=./signed.pdf --claim`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.HumanCompleteRequest{Decision: args[1]}
			if data != "" {
				var err error
				if req.Data, err = jsonArg("data", data); err != nil {
					return err
				}
			}
			if err := f.check(); err != nil {
				return err
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			id := args[0]
			if claim {
				if err := a.claimOpen(ctx, tg, id, &f); err != nil {
					return err
				}
			}
			if len(attach) > 0 {
				if req.Data, err = a.attachFiles(ctx, tg, id, req.Data, attach, f.asJSON); err != nil {
					return err
				}
			}
			h, err := f.post(ctx, tg, id, "complete", req)
			if err != nil {
				return claimHint(ctx, tg, id, claim, err)
			}
			if f.asJSON {
				return a.printJSON(h)
			}
			run, err := tg.getRun(ctx, h.RunID)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.out, "Completed %s with %s: run %s is %s\n", humanLabel(h), h.Decision, run.ID, runStateText(run))
			return err
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "the completion's data: JSON, or @file.json")
	cmd.Flags().BoolVar(&claim, "claim", false, "claim the task first when it is open")
	cmd.Flags().StringArrayVar(&attach, "attach", nil, "field=path: upload the file through the task and set data.field to its reference (repeatable)")
	f.add(cmd)
	return cmd
}

// claimOpen claims task id when it is open (reporting it unless --json);
// the completion then expects the claimed revision.
func (a *app) claimOpen(ctx context.Context, tg *target, id string, f *humanFlags) error {
	h, err := getHumanTask(ctx, tg, id)
	if err != nil || h.Status != "open" {
		return err
	}
	if h, err = f.post(ctx, tg, id, "claim", nil); err != nil {
		return err
	}
	f.revision = h.Revision
	if !f.asJSON {
		_, err = fmt.Fprintln(a.out, claimedText(h))
	}
	return err
}

// claimHint adds to a refused completion of an open task (without
// --claim) how to claim it.
func claimHint(ctx context.Context, tg *target, id string, claimed bool, err error) error {
	var ae *apiError
	if claimed || !errors.As(err, &ae) || ae.Code != client.CodeRuntimeState {
		return err
	}
	if h, gerr := getHumanTask(ctx, tg, id); gerr == nil && h.Status == "open" {
		return fmt.Errorf("%w; add --claim to claim it first", err)
	}
	return err
}
