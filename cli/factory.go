package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/client/factory"
)

// Routes of the factory (docs/factory-api.md).
const factoryRunsPath = "/api/v1/runs"

func (a *app) factoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "factory",
		Short: "Build, maintenance and test runs of your coding agent against a git repository",
		Long: `A factory run clones a local git repository (its committed HEAD) into the data
directory, has your coding agent (a bridge profile: claude, codex or a command)
carry out an instruction there, verifies the result with the project's own
checks (or .factory.yaml, or --verify), repairs on failure, and leaves a
checkpoint commit, a diff and changes.zip. Your working tree is never written
and nothing is pushed. These commands talk to the running daemon with the owner
token. See docs/factory-api.md.`,
		Example: `  bridge factory run --repo . --mode build "add a --json flag to list"
  bridge factory run --repo . --mode test
  bridge factory list --state failed
  bridge factory resume 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e
  bridge factory diff 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e | git apply`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.factoryRunCmd(), a.factoryListCmd(), a.factoryShowCmd(), a.factoryPlanCmd(), a.factoryJournalCmd(),
		a.factoryDiffCmd(), a.factoryVerifyLogCmd(), a.factoryExportCmd(), a.factoryCancelCmd(), a.factoryRetryCmd(), a.factoryResumeCmd(), a.factoryHandoffCmd(), a.factoryAnswerCmd(), a.factoryReconcileCmd())
	return cmd
}

func (a *app) factoryRunCmd() *cobra.Command {
	var req factory.CreateRequest
	var repairs int
	var project string
	var detach, asJSON bool
	cmd := &cobra.Command{
		Use:   "run [instruction]",
		Short: "Start a run and follow it until it ends",
		Long: `Queues a run of the repository containing --repo (default: the current
directory) and, unless --detach, shows its progress (the current task and
verification command) until it ends. The exit code is 0 when the run
succeeded, 1 otherwise. A test run takes no instruction: it only verifies.`,
		Example: `  bridge factory run --repo . --mode build "add a --json flag to list"
  bridge factory run --repo ./service --mode maintenance --profile codex "fix the flaky retry test"
  bridge factory run --repo . --mode test --verify "go test ./..." --verify "go vet ./..."
  bridge factory run --repo . --mode build --detach --json "rename Foo to Bar" | jq -r .id
  bridge factory run --repo . --mode test --project "$TENANT_ID/$PROJECT_ID"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				req.Instruction = args[0]
			}
			abs, err := filepath.Abs(req.Repo)
			if err != nil {
				return withCode(ExitUsage, fmt.Errorf("--repo: %w", err))
			}
			req.Repo = abs
			if cmd.Flags().Changed("repairs") {
				req.RepairAttempts = &repairs
			}
			if project != "" {
				tenant, proj, ok := strings.Cut(project, "/")
				if !ok || tenant == "" || proj == "" || strings.Contains(proj, "/") {
					return withCode(ExitUsage, fmt.Errorf("--project %q: want TENANT_ID/PROJECT_ID (the platform's ids, see 'bridge platform project list')", project))
				}
				req.Project = &factory.Project{Tenant: tenant, Project: proj}
			}
			c, err := a.daemonClient(cmd.Context())
			if err != nil {
				return err
			}
			var run factory.Run
			if err := c.do(cmd.Context(), http.MethodPost, c.state.ServicesURL, factoryRunsPath, req, &run); err != nil {
				return err
			}
			return a.followRun(cmd.Context(), c, run, detach, asJSON)
		},
	}
	cmd.Flags().StringVar(&req.Repo, "repo", ".", "the project: a git repository or a directory inside one")
	cmd.Flags().StringVar(&req.Mode, "mode", factory.ModeBuild, "build, maintenance or test")
	cmd.Flags().StringVar(&req.Profile, "profile", "", "bridge profile of the coding agent (config.yaml bridge.profiles; default: default)")
	cmd.Flags().StringVar(&req.Provider, "provider", "", "claude or codex with default settings (or the profile's provider)")
	cmd.Flags().StringArrayVar(&req.Verify, "verify", nil, "a verification command (repeatable, at most 20); replaces .factory.yaml and detection")
	cmd.Flags().StringVar(&req.VerifyTimeout, "verify-timeout", "", "timeout of each verification command, e.g. 5m (default 10m)")
	cmd.Flags().IntVar(&repairs, "repairs", 0, "repair attempts after failed verification, 0 to 3 (default FACTORY_REPAIR_ATTEMPTS, 2)")
	cmd.Flags().StringVar(&project, "project", "", "TENANT_ID/PROJECT_ID: platform principals with run.read on that project may read the run")
	cmd.Flags().BoolVar(&detach, "detach", false, "print the queued run and return at once")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON (at the end, or at once with --detach)")
	return cmd
}

// followRun prints a run's progress until it ends (unless detach) and
// returns an error when it did not succeed.
func (a *app) followRun(ctx context.Context, c *daemonConn, run factory.Run, detach, asJSON bool) error {
	if detach {
		if asJSON {
			return a.printJSON(run)
		}
		fmt.Fprintf(a.out, "run %s %s\n", run.ID, run.State)
		return nil
	}
	if !asJSON {
		fmt.Fprintf(a.errw, "run %s queued (source %s)\n", run.ID, shortRev(run.SourceRevision))
	}
	last := ""
	for {
		var err error
		run, err = a.getFactoryRun(ctx, c, run.ID)
		if err != nil {
			return err
		}
		if line := factoryProgress(run); line != last && !asJSON {
			fmt.Fprintln(a.errw, line)
			last = line
		}
		if run.State != factory.StateQueued && run.State != factory.StateRunning {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped following run %s (it goes on; bridge factory cancel %s stops it): %w", run.ID, run.ID, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
	if asJSON {
		if err := a.printJSON(run); err != nil {
			return err
		}
	} else {
		a.printFactoryRun(run)
	}
	if run.State != factory.StateSucceeded {
		return withCode(ExitError, fmt.Errorf("run %s %s", run.ID, run.State))
	}
	return nil
}

func (a *app) getFactoryRun(ctx context.Context, c *daemonConn, id string) (factory.Run, error) {
	var run factory.Run
	err := c.do(ctx, http.MethodGet, c.state.ServicesURL, factoryRunsPath+"/"+url.PathEscape(id), nil, &run)
	return run, err
}

// factoryProgress says what a run is doing now.
func factoryProgress(r factory.Run) string {
	switch {
	case r.State == factory.StateQueued:
		return "  queued (waiting for a free slot)"
	case r.State == factory.StateRunning && r.Progress != nil:
		line := fmt.Sprintf("  task %d: %s", r.Progress.Task, r.Progress.Title)
		if r.Progress.Command != "" {
			line += " — " + r.Progress.Command
		}
		if r.Progress.Paused != "" {
			line += " — " + r.Progress.Paused
		}
		return line
	case r.State == factory.StateRunning:
		return "  preparing the workspace"
	default:
		return "  " + r.State
	}
}

func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// printFactoryRun prints a run's summary.
func (a *app) printFactoryRun(r factory.Run) {
	w := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "run\t%s\n", r.ID)
	fmt.Fprintf(w, "state\t%s\n", r.State)
	if r.Error != nil {
		fmt.Fprintf(w, "error\t%s: %s\n", r.Error.Code, r.Error.Message)
	}
	fmt.Fprintf(w, "mode\t%s\n", r.Mode)
	repo := r.Repo
	if r.Subdir != "" {
		repo += " (" + r.Subdir + ")"
	}
	fmt.Fprintf(w, "repo\t%s\n", repo)
	if r.Provider != "" {
		fmt.Fprintf(w, "provider\t%s (profile %s)\n", r.Provider, r.Profile)
	}
	fmt.Fprintf(w, "source\t%s (tree %s)\n", shortRev(r.SourceRevision), shortRev(r.SourceTree))
	if r.CheckpointRevision != "" {
		fmt.Fprintf(w, "checkpoint\t%s\n", r.CheckpointRevision)
		fmt.Fprintf(w, "workspace\t%s\n", r.Workspace)
		fmt.Fprintf(w, "changed\t%s\n", strings.Join(r.ChangedFiles, ", "))
	}
	if r.Journal != nil {
		fmt.Fprintf(w, "journal\t%d entries, valid %t, open intents %v\n", r.Journal.Entries, r.Journal.Valid, r.Journal.OpenIntents)
	}
	for _, t := range r.Tasks {
		if t.State == factory.TaskPaused {
			fmt.Fprintf(w, "paused\ttask %d: %s\n", t.Index, t.Error)
		}
	}
	_ = w.Flush()
	for _, v := range r.Verification {
		fmt.Fprintf(a.out, "verification attempt %d: %s\n", v.Attempt, factoryPassFail(v.Passed))
		for _, c := range v.Commands {
			status := fmt.Sprintf("exit %d", c.ExitCode)
			if c.TimedOut {
				status = "timed out"
			}
			fmt.Fprintf(a.out, "  %-4s %s (%s, %dms)\n", factoryPassFail(c.Passed()), c.Name, status, c.DurationMS)
		}
	}
	if r.State == factory.StateSucceeded && r.CheckpointRevision != "" {
		fmt.Fprintf(a.out, "apply: bridge factory diff %s | git apply\n", r.ID)
	}
}

func factoryPassFail(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// factoryIDCmd builds a command taking one run id.
func (a *app) factoryIDCmd(use, short, long, example string, fn func(cmd *cobra.Command, c *daemonConn, id string) error) *cobra.Command {
	return &cobra.Command{
		Use: use + " <run-id>", Short: short, Long: long, Example: example, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.daemonClient(cmd.Context())
			if err != nil {
				return err
			}
			return fn(cmd, c, args[0])
		},
	}
}

// factoryJSONOrText prints v as JSON with --json, else calls text.
func (a *app) factoryJSONOrText(asJSON bool, v any, text func()) error {
	if asJSON {
		return a.printJSON(v)
	}
	text()
	return nil
}

func (a *app) factoryListCmd() *cobra.Command {
	var state, repo string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Example: `  bridge factory list
  bridge factory list --state needs_reconciliation
  bridge factory list --repo . --json | jq -r '.runs[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if state != "" {
				q.Set("state", state)
			}
			if repo != "" {
				abs, err := filepath.Abs(repo)
				if err != nil {
					return withCode(ExitUsage, err)
				}
				q.Set("repo", abs)
			}
			q.Set("limit", fmt.Sprint(limit))
			c, err := a.daemonClient(cmd.Context())
			if err != nil {
				return err
			}
			var page factory.RunPage
			if err := c.do(cmd.Context(), http.MethodGet, c.state.ServicesURL, factoryRunsPath+"?"+q.Encode(), nil, &page); err != nil {
				return err
			}
			return a.factoryJSONOrText(asJSON, page, func() {
				if len(page.Runs) == 0 {
					fmt.Fprintln(a.out, "no runs")
					return
				}
				w := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tSTATE\tMODE\tREPO\tCREATED\tERROR")
				for _, r := range page.Runs {
					errText := ""
					if r.Error != nil {
						errText = r.Error.Code
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.State, r.Mode, filepath.Join(r.Repo, r.Subdir), r.CreatedAt.Local().Format(time.DateTime), errText)
				}
				_ = w.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only runs in this state ("+strings.Join(factory.States, ", ")+")")
	cmd.Flags().StringVar(&repo, "repo", "", "only runs of this repository (its root directory)")
	cmd.Flags().IntVar(&limit, "limit", 20, "most runs shown (1 to 100)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the page as JSON")
	return cmd
}

func (a *app) factoryShowCmd() *cobra.Command {
	var asJSON bool
	cmd := a.factoryIDCmd("show", "Show a run: state, source, checkpoint, changed files, verification",
		"With --json the run is printed as the API returns it, with the agent's events, every check's output and the diff.",
		"  bridge factory show 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e\n  bridge factory show 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e --json | jq .turns",
		func(cmd *cobra.Command, c *daemonConn, id string) error {
			run, err := a.getFactoryRun(cmd.Context(), c, id)
			if err != nil {
				return err
			}
			return a.factoryJSONOrText(asJSON, run, func() { a.printFactoryRun(run) })
		})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

func (a *app) factoryPlanCmd() *cobra.Command {
	var asJSON bool
	cmd := a.factoryIDCmd("plan", "Show a run's plan: tasks, checks and frozen settings", "",
		"  bridge factory plan 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e",
		func(cmd *cobra.Command, c *daemonConn, id string) error {
			var plan factory.Plan
			if err := c.do(cmd.Context(), http.MethodGet, c.state.ServicesURL, factoryRunsPath+"/"+url.PathEscape(id)+"/plan", nil, &plan); err != nil {
				return err
			}
			return a.factoryJSONOrText(asJSON, plan, func() {
				fmt.Fprintf(a.out, "plan revision %d, role %s, repairs %d\n", plan.Revision, plan.Role, plan.Policy.RepairAttempts)
				for _, ch := range plan.Checks {
					fmt.Fprintf(a.out, "check   %s (%s)\n", ch.Name, ch.Source)
				}
				for _, t := range plan.Tasks {
					fmt.Fprintf(a.out, "task %d  %-9s %-7s %s (revision %d)\n", t.Index, t.State, t.Kind, t.Title, t.Revision)
				}
			})
		})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

func (a *app) factoryJournalCmd() *cobra.Command {
	var asJSON bool
	cmd := a.factoryIDCmd("journal", "Show a run's journal and check its hash chain",
		"Exits 1 when the chain is not valid.",
		"  bridge factory journal 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e",
		func(cmd *cobra.Command, c *daemonConn, id string) error {
			var j factory.JournalView
			if err := c.do(cmd.Context(), http.MethodGet, c.state.ServicesURL, factoryRunsPath+"/"+url.PathEscape(id)+"/journal", nil, &j); err != nil {
				return err
			}
			err := a.factoryJSONOrText(asJSON, j, func() {
				for _, e := range j.Entries {
					ref := ""
					if e.Ref > 0 {
						ref = fmt.Sprintf(" (of %d)", e.Ref)
					}
					fmt.Fprintf(a.out, "%3d  %s  %-14s %-10s%s %s\n", e.Seq, e.At.Local().Format(time.TimeOnly), e.Kind, e.Action, ref, e.Data)
				}
				fmt.Fprintf(a.out, "valid: %t; open intents: %v\n", j.Valid, j.OpenIntents)
				if j.Problem != "" {
					fmt.Fprintf(a.out, "problem: %s\n", j.Problem)
				}
			})
			if err == nil && !j.Valid {
				return withCode(ExitError, errors.New("the journal's hash chain is not valid: "+j.Problem))
			}
			return err
		})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the journal as JSON")
	return cmd
}

// downloadRaw copies a raw answer of the services listener to w.
func (c *daemonConn) downloadRaw(ctx context.Context, path string, w io.Writer) error {
	resp, err := c.api(c.state.ServicesURL).Send(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

func (a *app) factoryDiffCmd() *cobra.Command {
	return a.factoryIDCmd("diff", "Print a run's diff (source to checkpoint) as a git patch", "",
		"  bridge factory diff 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e\n  bridge factory diff 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e | git apply",
		func(cmd *cobra.Command, c *daemonConn, id string) error {
			return c.downloadRaw(cmd.Context(), factoryRunsPath+"/"+url.PathEscape(id)+"/diff", a.out)
		})
}

func (a *app) factoryExportCmd() *cobra.Command {
	var out string
	cmd := a.factoryIDCmd("export", "Save a run's changes.zip (manifest.json and files/<path> as in the checkpoint)", "",
		"  bridge factory export 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e -o changes.zip",
		func(cmd *cobra.Command, c *daemonConn, id string) error {
			if out == "" {
				out = "changes-" + id + ".zip"
			}
			f, err := os.OpenFile(out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			err = c.downloadRaw(cmd.Context(), factoryRunsPath+"/"+url.PathEscape(id)+"/artifacts/changes.zip", f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				_ = os.Remove(out)
				return err
			}
			fmt.Fprintln(a.out, out)
			return nil
		})
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (default changes-<run>.zip; never overwritten)")
	return cmd
}

func (a *app) factoryVerifyLogCmd() *cobra.Command {
	var attempt int
	cmd := a.factoryIDCmd("verify-log", "Print the output of a run's verification commands",
		"Prints every command of every attempt (or of --attempt) with its exit code and the end of its output (the whole output is in the run's logs directory).",
		"  bridge factory verify-log 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e --attempt 1",
		func(cmd *cobra.Command, c *daemonConn, id string) error {
			run, err := a.getFactoryRun(cmd.Context(), c, id)
			if err != nil {
				return err
			}
			for _, v := range run.Verification {
				if attempt > 0 && v.Attempt != attempt {
					continue
				}
				for _, ch := range v.Commands {
					fmt.Fprintf(a.out, "=== attempt %d, %s: %s (exit %d)\n%s\n", v.Attempt, factoryPassFail(ch.Passed()), ch.Name, ch.ExitCode, ch.Output)
				}
			}
			return nil
		})
	cmd.Flags().IntVar(&attempt, "attempt", 0, "only this verification attempt")
	return cmd
}

func (a *app) factoryCancelCmd() *cobra.Command {
	return a.factoryIDCmd("cancel", "Cancel a queued or running run (its agent and checks are killed)", "",
		"  bridge factory cancel 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e",
		func(cmd *cobra.Command, c *daemonConn, id string) error {
			var run factory.Run
			if err := c.do(cmd.Context(), http.MethodPost, c.state.ServicesURL, factoryRunsPath+"/"+url.PathEscape(id)+"/cancel", nil, &run); err != nil {
				return err
			}
			fmt.Fprintf(a.out, "run %s %s\n", run.ID, run.State)
			return nil
		})
}

// factoryFollowCmd builds a command that posts to a run's action route and
// follows the run it answers, like run does; body, when set, gives the
// request body (nil for none).
func (a *app) factoryFollowCmd(use, short, long, example, action string, body func() (any, error)) *cobra.Command {
	var detach, asJSON bool
	cmd := a.factoryIDCmd(use, short, long, example, func(cmd *cobra.Command, c *daemonConn, id string) error {
		var req any
		if body != nil {
			var err error
			if req, err = body(); err != nil {
				return err
			}
		}
		var run factory.Run
		if err := c.do(cmd.Context(), http.MethodPost, c.state.ServicesURL, factoryRunsPath+"/"+url.PathEscape(id)+"/"+action, req, &run); err != nil {
			return err
		}
		return a.followRun(cmd.Context(), c, run, detach, asJSON)
	})
	cmd.Flags().BoolVar(&detach, "detach", false, "print the queued run and return at once")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

func (a *app) factoryRetryCmd() *cobra.Command {
	return a.factoryFollowCmd("retry", "Start a fresh run (new clone of the repository's HEAD) with a finished run's settings", "",
		"  bridge factory retry 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e", "retry", nil)
}

func (a *app) factoryResumeCmd() *cobra.Command {
	return a.factoryFollowCmd("resume", "Go on with a cancelled, interrupted or provider-stopped run in the same workspace",
		"Plans the run's unfinished tasks again (a new plan revision) and follows the run like run does. The work already done is kept.",
		"  bridge factory resume 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e", "resume", nil)
}

func (a *app) factoryHandoffCmd() *cobra.Command {
	var req factory.HandoffRequest
	cmd := a.factoryFollowCmd("handoff", "Resume a run with another agent (a profile or provider), keeping its source, checks and evidence", "",
		"  bridge factory handoff 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e --profile codex", "handoff", func() (any, error) {
			if req.Profile == "" && req.Provider == "" {
				return nil, withCode(ExitUsage, errors.New("--profile or --provider is required"))
			}
			return req, nil
		})
	cmd.Flags().StringVar(&req.Profile, "profile", "", "the bridge profile that takes over")
	cmd.Flags().StringVar(&req.Provider, "provider", "", "claude or codex with default settings")
	return cmd
}

func (a *app) factoryAnswerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "answer <run-id> <text>",
		Short: "Answer the question of a paused run's worker (then: bridge factory resume)",
		Long: `bridge factory show prints the question of a paused run (or GET .../worker-messages);
the answer is given to the agent when the run is resumed.`,
		Example: `  bridge factory answer 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e "use the existing logger"`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.daemonClient(cmd.Context())
			if err != nil {
				return err
			}
			var run factory.Run
			if err := c.do(cmd.Context(), http.MethodPost, c.state.ServicesURL, factoryRunsPath+"/"+url.PathEscape(args[0])+"/answer", factory.AnswerRequest{Text: args[1]}, &run); err != nil {
				return err
			}
			fmt.Fprintf(a.out, "run %s %s; answered: resume it with bridge factory resume %s\n", run.ID, run.State, run.ID)
			return nil
		},
	}
}

func (a *app) factoryReconcileCmd() *cobra.Command {
	var note string
	cmd := a.factoryIDCmd("reconcile", "Resolve a run in needs_reconciliation with a note; it ends failed",
		"Journals a reconciliation entry for each intent left without a receipt, with your note, and ends the run failed; its source is not accepted. Use retry for a fresh run.",
		`  bridge factory reconcile 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e --note "agent killed mid-turn; workspace discarded"`,
		func(cmd *cobra.Command, c *daemonConn, id string) error {
			if strings.TrimSpace(note) == "" {
				return withCode(ExitUsage, errors.New("--note is required: say what you found and decided"))
			}
			var run factory.Run
			if err := c.do(cmd.Context(), http.MethodPost, c.state.ServicesURL, factoryRunsPath+"/"+url.PathEscape(id)+"/reconcile", factory.ReconcileRequest{Note: note}, &run); err != nil {
				return err
			}
			fmt.Fprintf(a.out, "run %s %s\n", run.ID, run.State)
			return nil
		})
	cmd.Flags().StringVar(&note, "note", "", "what you found and decided (journalled)")
	return cmd
}
