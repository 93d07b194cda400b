package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbridge/bridge/client"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

// runStatuses are the statuses of a run (the kernel's).
var runStatuses = []string{"running", "waiting", "suspended", "succeeded", "failed", "cancelled", "timed_out"}

// envTarget is where a workflow command works: --tenant, --project and
// --environment, each defaulting to the only one your grants reach (else
// the local workspace's), signed in with --provider.
type envTarget struct {
	provider string
	ids      scopeIDs
}

// add defines the target flags on cmd (persistent ones for a parent).
func (t *envTarget) add(cmd *cobra.Command, persistent bool) {
	fs := cmd.Flags()
	if persistent {
		fs = cmd.PersistentFlags()
	}
	fs.StringVar(&t.provider, "provider", "local", "identity provider whose cached token to use")
	fs.StringVar(&t.ids.tenant, "tenant", "", "tenant id (default: your only tenant, else the local workspace's)")
	fs.StringVar(&t.ids.project, "project", "", "project id (default: your only project of the tenant, else the local workspace's)")
	fs.StringVar(&t.ids.environment, "environment", "", "environment id (default: your only environment of the project, else the local workspace's)")
}

// target is a signed-in session with the ids of the project and, when
// asked for, the environment commands address.
type target struct {
	s   *platformSession
	ids scopeIDs
}

func (t *target) call(ctx context.Context, method, path string, hdr map[string]string, body, out any) error {
	_, err := t.s.call(ctx, method, path, hdr, body, out)
	return err
}

// api is the typed platform API through the session.
func (t *target) api() client.Platform { return client.Platform{D: t.s} }

// e is the environment the target addresses.
func (t *target) e() client.Env {
	return client.Env{Tenant: t.ids.tenant, Project: t.ids.project, Environment: t.ids.environment}
}

// env is the path of an environment resource ("/runs/...").
func (t *target) env(rest string) string { return t.ids.environmentPath() + rest }

// open signs in and fills the ids the flags left out from
// GET /api/v1/identity.
func (t *envTarget) open(ctx context.Context, a *app, needEnv bool) (*target, error) {
	s, err := a.platformSession(ctx, t.provider)
	if err != nil {
		return nil, err
	}
	ids := t.ids
	if ids.tenant == "" || ids.project == "" || (needEnv && ids.environment == "") {
		id, err := client.Platform{D: s}.Identity(ctx)
		if err != nil {
			return nil, err
		}
		if ids, err = pickWorkspace(id.Workspaces, ids, needEnv); err != nil {
			return nil, err
		}
	}
	return &target{s: s, ids: ids}, nil
}

// openEnv opens the target of cmd with its environment.
func (t *envTarget) openEnv(cmd *cobra.Command, a *app) (context.Context, *target, error) {
	tg, err := t.open(cmd.Context(), a, true)
	return cmd.Context(), tg, err
}

// pickWorkspace completes want with the caller's workspaces: a level left
// out is the only one reachable, else the local workspace's.
func pickWorkspace(ws []client.Workspace, want scopeIDs, needEnv bool) (scopeIDs, error) {
	tenant, err := pick(ws, &want.tenant, "tenant", client.LocalTenantName, func(w client.Workspace) (string, string) { return w.ID, w.Name })
	if err != nil {
		return want, err
	}
	var projects []client.WorkspaceProject
	if tenant != nil {
		projects = tenant.Projects
	}
	project, err := pick(projects, &want.project, "project", client.LocalProjectName, func(p client.WorkspaceProject) (string, string) { return p.ID, p.Name })
	if err != nil || !needEnv {
		return want, err
	}
	var envs []client.WorkspaceEnvironment
	if project != nil {
		envs = project.Environments
	}
	_, err = pick(envs, &want.environment, "environment", client.LocalEnvironmentName, func(e client.WorkspaceEnvironment) (string, string) { return e.ID, e.Name })
	return want, err
}

// pick chooses among items: the one whose id is *id when set (nil when
// not listed), else the only one, else the first named local; it sets
// *id.
func pick[T any](items []T, id *string, what, local string, key func(T) (string, string)) (*T, error) {
	if *id != "" {
		for i := range items {
			if itemID, _ := key(items[i]); itemID == *id {
				return &items[i], nil
			}
		}
		return nil, nil
	}
	chosen := -1
	if len(items) == 1 {
		chosen = 0
	}
	for i := range items {
		if _, name := key(items[i]); chosen < 0 && name == local {
			chosen = i
		}
	}
	if chosen < 0 {
		if len(items) == 0 {
			return nil, withCode(ExitUsage, fmt.Errorf("no %s to default to; pass --%s <id> (see 'bridge platform identity')", what, what))
		}
		return nil, withCode(ExitUsage, fmt.Errorf("you can use %d %ss; pass --%s <id> (see 'bridge platform identity')", len(items), what, what))
	}
	*id, _ = key(items[chosen])
	return &items[chosen], nil
}

// jsonArg reads a JSON flag value: inline JSON, or @file.
func jsonArg(flag, v string) (json.RawMessage, error) {
	data := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if data, err = os.ReadFile(name); err != nil {
			return nil, fmt.Errorf("--%s: %w", flag, err)
		}
	}
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		return nil, withCode(ExitUsage, fmt.Errorf("--%s is not valid JSON", flag))
	}
	return data, nil
}

// jsonObjectArg reads a JSON flag value that must be an object.
func jsonObjectArg(flag, v string) (json.RawMessage, error) {
	data, err := jsonArg(flag, v)
	if err == nil && data[0] != '{' {
		err = withCode(ExitUsage, fmt.Errorf("--%s must be a JSON object", flag))
	}
	return data, err
}

// inputFlags are the --input and --set flags of run start and retry.
type inputFlags struct {
	input string
	sets  []string
}

func (f *inputFlags) add(cmd *cobra.Command, inputHelp string) {
	cmd.Flags().StringVar(&f.input, "input", "", inputHelp)
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "set one input property, key=value (a dotted key reaches into objects; the value is JSON when it parses, else a string); repeatable")
}

// build answers base (or --input when given) with the --set properties
// applied.
func (f *inputFlags) build(base json.RawMessage) (json.RawMessage, error) {
	if f.input != "" {
		var err error
		if base, err = jsonObjectArg("input", f.input); err != nil {
			return nil, err
		}
	}
	if len(f.sets) == 0 {
		return base, nil
	}
	obj := map[string]any{}
	if len(base) > 0 {
		if err := json.Unmarshal(base, &obj); err != nil {
			return nil, withCode(ExitUsage, errors.New("the input must be a JSON object"))
		}
	}
	for _, kv := range f.sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, withCode(ExitUsage, fmt.Errorf("--set %q: want key=value", kv))
		}
		var val any = v
		if json.Valid([]byte(v)) {
			_ = json.Unmarshal([]byte(v), &val)
		}
		if err := setPath(obj, strings.Split(k, "."), val); err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("--set %s: %w", k, err))
		}
	}
	return json.Marshal(obj)
}

// setPath sets obj[path...] = v, creating objects on the way.
func setPath(obj map[string]any, path []string, v any) error {
	for _, seg := range path[:len(path)-1] {
		next, ok := obj[seg].(map[string]any)
		if !ok {
			if _, exists := obj[seg]; exists {
				return fmt.Errorf("%s is not an object", seg)
			}
			next = map[string]any{}
			obj[seg] = next
		}
		obj = next
	}
	obj[path[len(path)-1]] = v
	return nil
}

func (a *app) runCmd() *cobra.Command {
	var t envTarget
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Start, watch and control workflow runs",
		Long: `Commands for the runs of an environment of the workflow platform (the running
daemon's, through its API, with your platform sign-in: see 'bridge platform').
The tenant, project and environment default to the only ones you can use, else
to the local workspace 'bridge serve' created; --tenant, --project and
--environment choose others.

Publish and activate workflows first: 'bridge workflow publish' and
'bridge workflow activate'.

Exit codes: 0 ok, 1 failure (the API's problem code is shown; for --wait and
'logs --follow': the run did not succeed), 2 usage, 3 daemon not running.`,
		Example: `  bridge run start acme/flow --set name=Ada --wait
  bridge run list --status failed
  bridge run logs <run-id> --follow
  bridge run signal <run-id> parcel.shipped --payload '{"trackingId":"1Z999"}'`,
	}
	t.add(cmd, true)
	cmd.AddCommand(a.runStartCmd(&t), a.runGetCmd(&t), a.runListCmd(&t), a.runCancelCmd(&t), a.runRetryCmd(&t),
		a.runSignalCmd(&t), a.runPauseCmd(&t, true), a.runPauseCmd(&t, false), a.runStepsCmd(&t), a.runLogsCmd(&t),
		a.runArchiveCmd(&t, "archive"), a.runArchiveCmd(&t, "restore"), a.runArchiveCmd(&t, "purge"))
	return cmd
}

// runStartFlags are the flags run start and retry share.
type runStartFlags struct {
	in                   inputFlags
	businessKey, corrKey string
	activationID, key    string
	wait, asJSON         bool
}

func (f *runStartFlags) add(cmd *cobra.Command, inputHelp, activationHelp string) {
	f.in.add(cmd, inputHelp)
	cmd.Flags().StringVar(&f.activationID, "activation", "", activationHelp)
	cmd.Flags().StringVar(&f.businessKey, "business-key", "", "business key of the run (at most 200 characters)")
	cmd.Flags().StringVar(&f.corrKey, "correlation-key", "", "correlation key of the run (at most 200 characters)")
	cmd.Flags().StringVar(&f.key, "idempotency-key", "", "Idempotency-Key (default: a new one): repeating the command with the same key and values answers the first run")
	cmd.Flags().BoolVar(&f.wait, "wait", false, "wait until the run ends (progress on stderr); exit 1 unless it succeeded")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the run as JSON")
}

// idempotencyKey is --idempotency-key, else a new key.
func (f *runStartFlags) idempotencyKey() string { return cmp.Or(f.key, uuid.NewString()) }

func (a *app) runStartCmd(t *envTarget) *cobra.Command {
	var f runStartFlags
	cmd := &cobra.Command{
		Use:   "start <workflow-id[@version]> | --activation <id>",
		Short: "Start a run of an active workflow",
		Long: `Starts a run (POST E/runs) of the active activation of a workflow id (see
'bridge workflow activations'), or of the activation given with --activation.
The input is --input (JSON, or @file.json) with the --set properties applied;
the activation's input defaults fill absent top-level properties. Built-in
steps run at once, so a short run may already have ended when this returns.

With --wait, the command waits until the run ends, reporting its status
changes on stderr, and prints the ended run; it exits 1 unless the run
succeeded. Ctrl-C stops waiting (exit 1); the run continues.`,
		Example: `  bridge run start acme/flow --set name=Ada
  bridge run start acme/fulfil-order --input @order.json --business-key A-1001 --wait
  bridge run start --activation <activation-id> --input '{"name":"Ada"}' --json | jq -r .id`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (f.activationID != "") {
				return withCode(ExitUsage, errors.New("give a workflow id or --activation, not both"))
			}
			input, err := f.in.build(nil)
			if err != nil {
				return err
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			act := f.activationID
			label := "activation " + act
			if len(args) == 1 {
				found, err := activeActivation(ctx, tg, args[0])
				if err != nil {
					return err
				}
				act, label = found.ID, activationLabel(found)
			}
			req := client.StartRequest{ActivationID: act, Input: input, BusinessKey: f.businessKey, CorrelationKey: f.corrKey}
			run, err := tg.api().StartRun(ctx, tg.e(), f.idempotencyKey(), req)
			if err != nil {
				return err
			}
			return a.startedRun(ctx, tg, run, label, &f)
		},
	}
	f.add(cmd, "run input: a JSON object, or @file.json", "activation id to start (instead of a workflow id)")
	return cmd
}

// startedRun reports a run that start or retry created, waiting for its end
// with --wait.
func (a *app) startedRun(ctx context.Context, tg *target, run client.Run, label string, f *runStartFlags) error {
	if !f.wait {
		if f.asJSON {
			return a.printJSON(run)
		}
		a.printRun(run, label)
		return nil
	}
	fmt.Fprintf(a.errw, "Started run %s of %s\n", run.ID, label)
	run, err := a.waitRun(ctx, tg, run)
	if err != nil {
		return err
	}
	if f.asJSON {
		err = a.printJSON(run)
	} else {
		a.printRun(run, label)
	}
	if err == nil {
		err = runOutcome(run)
	}
	return err
}

// runOutcome is nil for a succeeded run, else an exit 1 error saying how
// it ended.
func runOutcome(run client.Run) error {
	if run.Status == client.RunSucceeded {
		return nil
	}
	msg := fmt.Sprintf("run %s %s", run.ID, run.Status)
	if e := run.State.Error; e != nil {
		msg += ": " + runErrorText(e)
	}
	return withCode(ExitError, errors.New(msg))
}

// errorText is "code: message" of a task error.
func errorText(e *client.TaskError) string {
	if e == nil {
		return ""
	}
	return strings.TrimSuffix(e.Code+": "+e.Message, ": ")
}

func runErrorText(e *client.RunError) string {
	s := e.Code
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Node != "" {
		s += " (step " + e.Node + ")"
	}
	return s
}

// activeActivation finds the active activation of ref (workflow-id or
// workflow-id@version).
func activeActivation(ctx context.Context, tg *target, ref string) (client.Activation, error) {
	id, version, err := parseWorkflowRef(ref)
	if err != nil {
		return client.Activation{}, err
	}
	x, err := findActive(ctx, tg, id, version)
	if err == nil && x == nil {
		err = fmt.Errorf("no active activation of workflow %s in environment %s; activate it with: bridge workflow activate %s", ref, tg.ids.environment, ref)
	}
	if err != nil {
		return client.Activation{}, err
	}
	return *x, nil
}

// findActive reads the active activation of workflow id (of that version
// unless 0); nil when there is none.
func findActive(ctx context.Context, tg *target, id string, version int) (*client.Activation, error) {
	acts, err := collectPages[client.Activation](ctx, tg.s, tg.env("/activations?status=active&limit=100"), false)
	if err != nil {
		return nil, err
	}
	for _, x := range acts {
		if x.WorkflowID == id && (version == 0 || x.WorkflowVersion == version) {
			return &x, nil
		}
	}
	return nil, nil
}

// parseWorkflowRef splits id[@version] (version 0 when absent).
func parseWorkflowRef(ref string) (string, int, error) {
	id, v, ok := strings.Cut(ref, "@")
	if id == "" {
		return "", 0, withCode(ExitUsage, fmt.Errorf("%q: want a workflow id, optionally @version", ref))
	}
	if !ok {
		return id, 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return "", 0, withCode(ExitUsage, fmt.Errorf("%q: the version is a whole number from 1", ref))
	}
	return id, n, nil
}

func activationLabel(x client.Activation) string {
	return fmt.Sprintf("%s@%d (activation %s)", x.WorkflowID, x.WorkflowVersion, x.ID)
}

// pollDelay grows the delay between polls from 50 ms to 1 s.
func pollDelay(d time.Duration) time.Duration {
	if d == 0 {
		return 50 * time.Millisecond
	}
	return min(d*2, time.Second)
}

// sleep waits d or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// waitRun polls run until it ends, reporting status changes on stderr.
func (a *app) waitRun(ctx context.Context, tg *target, run client.Run) (client.Run, error) {
	var delay time.Duration
	last := ""
	for {
		if state := runStateText(run); state != last {
			last, delay = state, 0
			fmt.Fprintf(a.errw, "%s run %s is %s\n", time.Now().Format("15:04:05.000"), run.ID, state)
			if run.Status == string(client.RunSuspended) {
				fmt.Fprintf(a.errw, "  an incident waits for an operator: bridge incident list --run %s\n", run.ID)
			}
		}
		if client.RunTerminal(run.Status) {
			return run, nil
		}
		delay = pollDelay(delay)
		var err error
		if sleep(ctx, delay) {
			var next client.Run
			if next, err = tg.getRun(ctx, run.ID); err == nil {
				run = next
				continue
			}
		}
		if ctx.Err() != nil {
			return run, withCode(ExitError, fmt.Errorf("stopped waiting: run %s is still %s; follow it with: bridge run logs %s --follow", run.ID, last, run.ID))
		}
		return run, err
	}
}

func runStateText(run client.Run) string {
	return statusText(run.Status, run.Paused, run.Archived)
}

// statusText is a run's status with its paused and archived marks.
func statusText(status string, paused, archived bool) string {
	if paused {
		status += " (paused)"
	}
	if archived {
		status += " (archived)"
	}
	return status
}

const timeLayout = "2006-01-02 15:04:05"

// printRun writes a run for people; label names its workflow or activation.
func (a *app) printRun(run client.Run, label string) {
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Run %s %s\n", run.ID, runStateText(run))
	if label == "" {
		label = "activation " + run.Activation.ID
	}
	fmt.Fprintf(tw, "  workflow\t%s\n", label)
	if run.BusinessKey != nil {
		fmt.Fprintf(tw, "  business key\t%s\n", *run.BusinessKey)
	}
	if run.CorrelationKey != nil {
		fmt.Fprintf(tw, "  correlation key\t%s\n", *run.CorrelationKey)
	}
	if run.ParentRunID != nil {
		fmt.Fprintf(tw, "  retry of\t%s\n", *run.ParentRunID)
	}
	fmt.Fprintf(tw, "  created\t%s\n", run.CreatedAt.Local().Format(timeLayout))
	fmt.Fprintf(tw, "  updated\t%s (event %d)\n", run.UpdatedAt.Local().Format(timeLayout), run.AcceptedSequence)
	fmt.Fprintf(tw, "  input\t%s\n", compactJSON(run.State.Input))
	if len(run.State.Output) > 0 {
		fmt.Fprintf(tw, "  output\t%s\n", compactJSON(run.State.Output))
	}
	if run.State.Error != nil {
		fmt.Fprintf(tw, "  error\t%s\n", runErrorText(run.State.Error))
	}
	for _, tk := range run.State.Tasks {
		fmt.Fprintf(tw, "  task\t%s (%s) attempt %d %s\n", tk.Instance, tk.Executor, tk.Attempt, tk.Status)
	}
	if m := run.ExternalEffectsMayContinue; m != nil && *m {
		fmt.Fprintf(tw, "  note\twork already issued may still finish\n")
	}
	tw.Flush()
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// getRun reads a run of the target's environment.
func (t *target) getRun(ctx context.Context, id string) (client.Run, error) {
	return t.api().Run(ctx, t.e(), id)
}

// printTable prints items as a JSON array with asJSON, else as a table
// under header (tab separated) with a row of cells each, or the line
// empty when there are none.
func printTable[T any](a *app, items []T, asJSON bool, empty, header string, row func(T) []string) error {
	if asJSON {
		return a.printJSON(nonNil(items))
	}
	if len(items) == 0 {
		_, err := fmt.Fprintln(a.out, empty)
		return err
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		fmt.Fprintln(tw, strings.Join(row(it), "\t"))
	}
	return tw.Flush()
}

// runIDCmd completes cmd, which carries the help text and takes the run id
// as its first argument: it POSTs body() to E/runs/{run}/{action} with the
// Idempotency-Key key() (none when empty) and prints the answered run, as
// JSON with --json.
func (a *app) runIDCmd(t *envTarget, cmd *cobra.Command, action string, key func() string, body func() any) *cobra.Command {
	var asJSON bool
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx, tg, err := t.openEnv(cmd, a)
		if err != nil {
			return err
		}
		run, err := tg.api().RunAction(ctx, tg.e(), args[0], action, key(), body())
		if err != nil {
			return err
		}
		if asJSON {
			return a.printJSON(run)
		}
		a.printRun(run, "")
		return nil
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

func (a *app) runGetCmd(t *envTarget) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "get <run-id>",
		Aliases: []string{"show"},
		Short:   "Show a run: status, input, output, error, tasks",
		Long: `Shows a run (GET E/runs/{run}). Secret input and output values are shown as
"[redacted]". --json prints the API's Run.`,
		Example: `  bridge run get <run-id>
  bridge run get <run-id> --json | jq .state.output`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			run, err := tg.getRun(ctx, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(run)
			}
			label := ""
			if x, err := tg.api().Activation(ctx, tg.e(), run.Activation.ID); err == nil {
				label = activationLabel(x)
			}
			a.printRun(run, label)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

func (a *app) runListCmd(t *envTarget) *cobra.Command {
	var status, workflow, activationID, businessKey string
	var limit int
	var includeTest, includeArchived, asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Long: `Lists run summaries of the environment (GET E/runs), newest first. --status
takes one or more of running, waiting, suspended, succeeded, failed, cancelled,
timed_out (comma separated); --workflow an id, or id@version.`,
		Example: `  bridge run list
  bridge run list --status failed,timed_out --workflow acme/flow --limit 100
  bridge run list --json | jq -r '.[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 1000 {
				return withCode(ExitUsage, fmt.Errorf("--limit must be 1 to 1000, got %d", limit))
			}
			q := url.Values{}
			if status != "" {
				for _, st := range splitList(status) {
					if !slices.Contains(runStatuses, st) {
						return withCode(ExitUsage, fmt.Errorf("--status: %q is none of %s", st, strings.Join(runStatuses, ", ")))
					}
				}
				q.Set("status", strings.Join(splitList(status), ","))
			}
			for k, v := range map[string]string{"workflow": workflow, "activation_id": activationID, "business_key": businessKey} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if includeTest {
				q.Set("include_test", "true")
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			if includeArchived {
				q.Set("include_archived", "true")
			}
			runs, err := firstItems[client.RunSummary](ctx, tg, tg.env("/runs"), q, limit, 100)
			if err != nil {
				return err
			}
			return printTable(a, runs, asJSON, "no runs", "RUN\tSTATUS\tWORKFLOW\tCREATED\tBUSINESS KEY", func(r client.RunSummary) []string {
				return []string{r.ID, statusText(r.Status, r.Paused, r.Archived), r.Workflow, r.CreatedAt.Local().Format(timeLayout), deref(r.BusinessKey)}
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only runs with these statuses (comma separated)")
	cmd.Flags().StringVar(&workflow, "workflow", "", "only runs of this workflow: id, or id@version")
	cmd.Flags().StringVar(&activationID, "activation", "", "only runs of this activation")
	cmd.Flags().StringVar(&businessKey, "business-key", "", "only runs with this business key")
	cmd.Flags().BoolVar(&includeTest, "include-test", false, "include test runs")
	cmd.Flags().BoolVar(&includeArchived, "include-archived", false, "include archived runs (marked \"(archived)\")")
	cmd.Flags().IntVar(&limit, "limit", 20, "most runs shown (1 to 1000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as a JSON array")
	return cmd
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// firstItems reads pages of path?q (page size at most pageMax) until it
// has limit items or the last page.
func firstItems[T any](ctx context.Context, tg *target, path string, q url.Values, limit, pageMax int) ([]T, error) {
	var all []T
	for {
		q.Set("limit", strconv.Itoa(min(limit-len(all), pageMax)))
		var page client.Page[T]
		if err := tg.call(ctx, http.MethodGet, path+"?"+q.Encode(), nil, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if len(all) >= limit || page.NextCursor == nil || *page.NextCursor == "" {
			return all, nil
		}
		q.Set("cursor", *page.NextCursor)
	}
}

func (a *app) runCancelCmd(t *envTarget) *cobra.Command {
	var reason, key string
	cmd := a.runIDCmd(t, &cobra.Command{
		Use:   "cancel <run-id> --reason <text>",
		Short: "Cancel a run that has not ended",
		Long: `Cancels a run (POST E/runs/{run}/cancel). Cancelling a cancelled run changes
nothing; another ended run is refused (PF-RUNTIME-STATE). Work already issued
(an HTTP call, a worker task) may still finish: the output says so.`,
		Example: `  bridge run cancel <run-id> --reason "customer withdrew the order"`,
		Args:    cobra.ExactArgs(1),
	}, "cancel", func() string { return key }, func() any { return client.CancelRequest{Reason: reason} })
	cmd.Flags().StringVar(&reason, "reason", "", "why the run is cancelled; required")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key (optional)")
	requireFlags(cmd, "reason")
	return cmd
}

func (a *app) runPauseCmd(t *envTarget, pause bool) *cobra.Command {
	verb, long := "resume", `Resumes a paused run (POST E/runs/{run}/resume): the events held while it was
paused are applied in arrival order.`
	if pause {
		verb, long = "pause", `Pauses a run (POST E/runs/{run}/pause): no step starts, timers and dispatches
wait, and arriving events (task outcomes, signals, ...) are held until it is
resumed. Work already issued may still finish; cancellation applies at once.`
	}
	var reason, key string
	cmd := a.runIDCmd(t, &cobra.Command{
		Use:     verb + " <run-id>",
		Short:   strings.ToUpper(verb[:1]) + verb[1:] + " a run",
		Long:    long,
		Example: fmt.Sprintf("  bridge run %s <run-id>\n  bridge run %s <run-id> --reason \"waiting for the supplier\"", verb, verb),
		Args:    cobra.ExactArgs(1),
	}, verb, func() string { return cmp.Or(key, uuid.NewString()) }, func() any { return client.PauseRequest{Reason: reason} })
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the run's history)")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key (default: a new one)")
	return cmd
}

// runArchiveCmd is run archive, restore or purge (verb): POST
// E/runs/{run}/{verb} (docs/platform-api.md, "Archiving, restoring and
// purging runs").
func (a *app) runArchiveCmd(t *envTarget, verb string) *cobra.Command {
	var reason, key string
	var asJSON bool
	docs := map[string][3]string{
		"archive": {"Archive an ended run: pack its history and logs into one compressed record",
			`Archives an ended run (POST E/runs/{run}/archive): its accepted events and log
lines are packed into one compressed record. The run stays readable with
'bridge run get' and can be retried; 'run list' leaves it out unless
--include-archived is given, and its steps and logs answer PF-RUNTIME-STATE
until it is restored. A run that has not ended is refused (PF-RUNTIME-STATE).
The daemon also archives ended runs by itself after platform.runs.archive-after
(default 7 days; docs/retention.md).`,
			"  bridge run archive <run-id>\n  bridge run archive <run-id> --reason \"closed ticket\" --json"},
		"restore": {"Restore an archived run: put its history and logs back",
			`Restores an archived run (POST E/runs/{run}/restore): its events and log lines
are put back with their sequence numbers, and it appears in 'run list' again.
Restoring a run that is not archived changes nothing.`,
			"  bridge run restore <run-id>"},
		"purge": {"Delete an archived run and everything recorded for it",
			`Purges an archived run (POST E/runs/{run}/purge): the run, its archive,
incidents, tasks and file references are deleted; afterwards it is not found.
Only an archived run can be purged, and not while a retry or child run refers
to it (PF-RUNTIME-STATE: purge that run first). This cannot be undone.`,
			"  bridge run archive <run-id> && bridge run purge <run-id> --reason \"retention\""},
	}[verb]
	cmd := &cobra.Command{
		Use:     verb + " <run-id>",
		Short:   docs[0],
		Long:    docs[1],
		Example: docs[2],
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			req, k := client.ArchiveRequest{Reason: reason}, cmp.Or(key, uuid.NewString())
			if verb == "purge" {
				res, err := tg.api().PurgeRun(ctx, tg.e(), args[0], k, req)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(res)
				}
				fmt.Fprintf(a.out, "Run %s purged\n", res.RunID)
				return nil
			}
			res, err := tg.api().ArchiveAction(ctx, tg.e(), args[0], verb, k, req)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(res)
			}
			state := "restored (live)"
			if res.Archived {
				state = "archived"
			}
			fmt.Fprintf(a.out, "Run %s %s %s: %d events, %d log lines\n", res.RunID, res.Status, state, res.Events, res.Logs)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (at most 2000 characters; kept in the access audit)")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key (default: a new one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's answer as JSON")
	return cmd
}

func (a *app) runRetryCmd(t *envTarget) *cobra.Command {
	var f runStartFlags
	cmd := &cobra.Command{
		Use:   "retry <run-id>",
		Short: "Start an ended run again, as a new run",
		Long: `Starts a new run (POST E/runs/{run}/retry) with the ended run's activation,
input and keys; the ended run is unchanged and becomes the new run's parent.
--input replaces the input, --set changes properties of it, --activation
starts another activation (when the first was replaced). An input with secret
values (shown "[redacted]") needs --input.`,
		Example: `  bridge run retry <run-id>
  bridge run retry <run-id> --set name=Grace --wait`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			old, err := tg.getRun(ctx, args[0])
			if err != nil {
				return err
			}
			if f.in.input == "" && bytes.Contains(old.State.Input, []byte(`"[redacted]"`)) {
				return fmt.Errorf("run %s has secret input values (redacted); pass the input with --input", old.ID)
			}
			input, err := f.in.build(old.State.Input)
			if err != nil {
				return err
			}
			req := client.StartRequest{ActivationID: old.Activation.ID, Input: input, BusinessKey: deref(old.BusinessKey), CorrelationKey: deref(old.CorrelationKey)}
			if f.activationID != "" {
				req.ActivationID = f.activationID
			}
			if cmd.Flags().Changed("business-key") {
				req.BusinessKey = f.businessKey
			}
			if cmd.Flags().Changed("correlation-key") {
				req.CorrelationKey = f.corrKey
			}
			run, err := tg.api().RunAction(ctx, tg.e(), old.ID, "retry", f.idempotencyKey(), req)
			if err != nil {
				return err
			}
			return a.startedRun(ctx, tg, run, "activation "+run.Activation.ID+", retry of "+old.ID, &f)
		},
	}
	f.add(cmd, "replace the input: a JSON object, or @file.json", "start this activation instead of the run's")
	return cmd
}

func (a *app) runSignalCmd(t *envTarget) *cobra.Command {
	var payload, key string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "signal <run-id> <name>",
		Short: "Send a named signal to a run",
		Long: `Sends a signal (POST E/runs/{run}/signals). The signal step waiting longest
for that name receives it; a signal nobody waits for yet is buffered. A
payload that violates the waiting step's schema is refused and changes
nothing. While the run is paused the signal is held and applied on resume.`,
		Example: `  bridge run signal <run-id> parcel.shipped --payload '{"trackingId":"1Z999"}'
  bridge run signal <run-id> approved --payload @decision.json --idempotency-key approve-A-1001`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.SignalRequest{Name: args[1]}
			if payload != "" {
				var err error
				if req.Payload, err = jsonArg("payload", payload); err != nil {
					return err
				}
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			res, err := tg.api().Signal(ctx, tg.e(), args[0], key, req)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(res)
			}
			held := ""
			if res.Held {
				held = "; held until the run is resumed"
			}
			fmt.Fprintf(a.out, "Signal %s accepted by run %s (event %d, status %s%s)\n", res.Name, res.RunID, res.AcceptedSequence, res.Status, held)
			return nil
		},
	}
	cmd.Flags().StringVar(&payload, "payload", "", "signal payload: JSON, or @file.json")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key (optional): repeating with the same key and values is accepted once")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}

func (a *app) runStepsCmd(t *envTarget) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "steps <run-id>",
		Short: "List a run's step instances in start order",
		Long: `Lists the step instances of a run (GET E/runs/{run}/steps) in the order they
started: kind, status (running, retrying, waiting, suspended, completed, failed,
timed_out, cancelled), attempts, and what an active step waits for or the last
error.`,
		Example: `  bridge run steps <run-id>
  bridge run steps <run-id> --json | jq -r '.[] | select(.status=="failed") | .node_id'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			steps, err := collectPages[client.Step](ctx, tg.s, tg.env("/runs/"+url.PathEscape(args[0])+"/steps?limit=500"), false)
			if err != nil {
				return err
			}
			return printTable(a, steps, asJSON, "no steps", "STEP\tKIND\tSTATUS\tATTEMPTS\tSTARTED\tENDED\tNOTE", func(s client.Step) []string {
				ended, attempts, note := "", "", ""
				if s.EndedAt != nil {
					ended = s.EndedAt.Local().Format("15:04:05.000")
				}
				if s.Attempts > 0 {
					attempts = strconv.Itoa(s.Attempts)
				}
				switch {
				case s.LastError != nil:
					note = errorText(s.LastError)
				case s.WaitingFor != "":
					note = "waiting for " + s.WaitingFor
				}
				return []string{s.Instance, s.Kind, s.Status, attempts, s.StartedAt.Local().Format("15:04:05.000"), ended, note}
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the steps as a JSON array")
	return cmd
}

func (a *app) runLogsCmd(t *envTarget) *cobra.Command {
	var follow, asJSON bool
	var level string
	cmd := &cobra.Command{
		Use:   "logs <run-id>",
		Short: "Print a run's log; --follow until the run ends",
		Long: `Prints a run's log lines (GET E/runs/{run}/logs) as
"HH:MM:SS.mmm LEVEL node message" ("-" for lines about the whole run); --json
prints one JSON object per line instead.

With --follow, polls for new lines until the run has ended, then exits 0 when
it succeeded and 1 otherwise (failed, cancelled, timed out). Ctrl-C stops
following with exit 0.`,
		Example: `  bridge run logs <run-id>
  bridge run logs <run-id> --follow
  bridge run logs <run-id> --level warn --json | jq -r .message`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if level != "" && !slices.Contains([]string{"info", "warn", "error"}, level) {
				return withCode(ExitUsage, fmt.Errorf("--level must be info, warn or error"))
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			l := &logFollower{a: a, tg: tg, run: args[0], level: level, asJSON: asJSON}
			if !follow {
				return l.drain(ctx)
			}
			err = l.follow(ctx)
			if ctx.Err() != nil {
				return nil // interrupted: a normal end
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until the run ends")
	cmd.Flags().StringVar(&level, "level", "", "minimum level: info (default), warn or error")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	return cmd
}

// logFollower prints a run's log lines after the last one it printed.
type logFollower struct {
	a      *app
	tg     *target
	run    string
	level  string
	asJSON bool
	after  int64
}

const logPage = 500

// drain prints every line after l.after.
func (l *logFollower) drain(ctx context.Context) error {
	for {
		q := url.Values{"after": {strconv.FormatInt(l.after, 10)}, "limit": {strconv.Itoa(logPage)}}
		if l.level != "" {
			q.Set("level", l.level)
		}
		page, err := l.tg.api().Logs(ctx, l.tg.e(), l.run, q)
		if err != nil {
			return err
		}
		for _, e := range page.Items {
			if err := l.print(e); err != nil {
				return err
			}
			l.after = e.ID
		}
		if len(page.Items) < logPage {
			return nil
		}
	}
}

func (l *logFollower) print(e client.LogEntry) error {
	if l.asJSON {
		data, err := json.Marshal(e)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(l.a.out, "%s\n", data)
		return err
	}
	node := "-"
	if e.NodeID != nil {
		node = *e.NodeID
	}
	_, err := fmt.Fprintf(l.a.out, "%s %-5s %s %s\n", e.At.Local().Format("15:04:05.000"), strings.ToUpper(e.Level), node, e.Message)
	return err
}

// follow prints lines until the run has ended: the run is read before
// each drain, so the lines of its end are printed before follow returns
// its outcome.
func (l *logFollower) follow(ctx context.Context) error {
	var delay time.Duration
	for {
		run, err := l.tg.getRun(ctx, l.run)
		if err != nil {
			return err
		}
		before := l.after
		if err := l.drain(ctx); err != nil {
			return err
		}
		if client.RunTerminal(run.Status) {
			return runOutcome(run)
		}
		if l.after != before {
			delay = 0
		}
		delay = pollDelay(delay)
		if !sleep(ctx, delay) {
			return nil
		}
	}
}
