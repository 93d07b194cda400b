package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"text/tabwriter"
	"time"

	"github.com/agentbridge/bridge/client"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

// testCmd is `bridge test`: step tests, draft test activations and the
// environment's test policy (docs/platform-api.md, "Step tests and test
// activations").
func (a *app) testCmd() *cobra.Command {
	var t envTarget
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Test drafts for real in an environment: one step, or a draft activated for a while",
		Long: `Unlike a debug session, a test runs a draft for real in an environment: http
calls are made, people are asked, timers run. The environment's test policy
must allow it ('bridge test policy all' or 'read_only'), and a step whose
action has side effects (idempotent, idempotency_key, unsafe) runs only with
--ack naming that class.

  bridge test draft FILE          save a workflow source as a draft
  bridge test step DRAFT STEP     run one step of it as a test run
  bridge test activate DRAFT      activate it for up to an hour
  bridge test run ID              start a test run of a test activation
  bridge test listen ID           a signed URL that starts a test run per request

Test runs are marked test: 'bridge run list' leaves them out unless
--include-test. The tenant, project and environment default as for
'bridge run'.

Exit codes: 0 ok, 1 failure (the API's problem code is shown; a step test
that did not succeed with --wait), 2 usage, 3 daemon not running.`,
		Example: `  bridge test policy all
  bridge test draft tickets.yaml
  bridge test step <draft-id> create --input '{"base":"http://127.0.0.1:8088"}' --ack idempotency_key --wait`,
	}
	t.add(cmd, true)
	cmd.AddCommand(a.testPolicyCmd(&t), a.testDraftCmd(&t), a.testStepCmd(&t), a.testShowCmd(&t), a.testAnswerCmd(&t), a.testCancelCmd(&t),
		a.testActivateCmd(&t), a.testRunCmd(&t), a.testListenCmd(&t), a.testSendCmd(), a.testDeactivateCmd(&t))
	return cmd
}

func (a *app) testPolicyCmd(t *envTarget) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "policy [disabled|read_only|all]",
		Short: "Show or set the environment's test policy",
		Long: `Without an argument, shows the policy (an environment without one is disabled
at revision 0). With one, saves it: disabled refuses every step test,
read_only allows steps without side effects or with read_only actions, all
allows side-effecting steps too, each with --ack. You need step.test.`,
		Example: "  bridge test policy\n  bridge test policy all\n  bridge test policy read_only --json",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			p, err := tg.api().TestPolicy(ctx, tg.e())
			if err != nil {
				return err
			}
			if len(args) == 1 {
				hdr := map[string]string{}
				if p.Revision > 0 {
					hdr["If-Match"] = client.FormatETag(p.Revision)
				}
				if p, err = tg.api().SaveTestPolicy(ctx, tg.e(), hdr, client.TestPolicyRequest{TestCalls: args[0]}); err != nil {
					return err
				}
			}
			if asJSON {
				return a.printJSON(p)
			}
			fmt.Fprintf(a.out, "Test policy: %s (revision %d)\n", p.TestCalls, p.Revision)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the policy as JSON")
	return cmd
}

func (a *app) testDraftCmd(t *envTarget) *cobra.Command {
	var id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "draft <file.yaml>",
		Short: "Save a workflow source as a draft of the project (new, or a new revision with --id)",
		Long: `Saves the file as a draft (PUT P/drafts/{id}): a new draft with a new id, or a
new revision of the draft --id. A draft may hold any source; a step test
compiles the revision it names. Prints the draft id and revision.`,
		Example: "  bridge test draft tickets.yaml\n  bridge test draft tickets.yaml --id <draft-id> --json | jq -r .revision",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return withCode(ExitUsage, err)
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			hdr := map[string]string{}
			if id == "" {
				id = uuid.NewString()
			} else {
				d, err := tg.api().Draft(ctx, tg.e(), id)
				if err != nil {
					return err
				}
				hdr["If-Match"] = client.FormatETag(d.Revision)
			}
			d, err := tg.api().SaveDraft(ctx, tg.e(), id, hdr, client.PublishRequest{Source: string(src), Format: "yaml"})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(d)
			}
			fmt.Fprintf(a.out, "Draft %s saved at revision %d\n", d.ID, d.Revision)
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "save a new revision of this draft (default: a new draft)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the draft as JSON")
	return cmd
}

// latestRevision answers the draft's latest saved revision.
func latestRevision(ctx context.Context, tg *target, draft string) (int64, error) {
	d, err := tg.api().Draft(ctx, tg.e(), draft)
	return d.SourceRevision, err
}

func (a *app) testStepCmd(t *envTarget) *cobra.Command {
	var req client.StepTestRequest
	var input, mocks string
	var wait, asJSON bool
	cmd := &cobra.Command{
		Use:   "step <draft-id> <step-id>",
		Short: "Run one step of a draft for real as a test run",
		Long: `Compiles the draft revision (default: the latest) against the project's catalog
and runs the step alone as a test run. For action, agent, decision and
workflow steps --input is the step's input (it replaces the step's with);
for the others it is the run input the step's expressions read. A step whose
action has side effects needs --ack with its class (the refusal names it).
The time limit is --timeout seconds (1..300, agent steps 1..900).

With --wait, follows the step test until it ends or waits for a person
(progress on stderr; answer with 'bridge test answer'); exit code 1 unless
it succeeded.`,
		Example: `  bridge test step <draft-id> health --input '{"base":"http://127.0.0.1:8088"}' --wait
  bridge test step <draft-id> create --input @ticket.json --ack idempotency_key --wait --json
  bridge test step <draft-id> approve --kind human --input '{"subject":"printer"}'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.DraftID, req.StepID = args[0], args[1]
			if input != "" {
				raw, err := jsonArg("input", input)
				if err != nil {
					return err
				}
				req.Input = raw
			}
			if mocks != "" {
				raw, err := jsonArg("tool-mocks", mocks)
				if err != nil {
					return err
				}
				if err := json.Unmarshal(raw, &req.ToolMocks); err != nil {
					return withCode(ExitUsage, fmt.Errorf("--tool-mocks is a JSON object of tool name to output: %w", err))
				}
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			if req.DraftRevision == 0 {
				if req.DraftRevision, err = latestRevision(ctx, tg, req.DraftID); err != nil {
					return err
				}
			}
			c, err := tg.api().StartStepTest(ctx, tg.e(), req)
			if err != nil {
				return err
			}
			if !wait {
				if asJSON {
					return a.printJSON(c)
				}
				fmt.Fprintf(a.out, "Step test %s %s: run %s, side effect %s, until %s\n", c.ID, c.Status, c.RunID, c.SideEffect,
					c.ExpiresAt.Local().Format(timeLayout))
				return nil
			}
			return a.followStep(ctx, tg, c.ID, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Kind, "kind", "action", "the step's kind: action, agent, decision, human, workflow, set, wait or signal")
	f.Int64Var(&req.DraftRevision, "revision", 0, "the draft revision to test (default: the latest)")
	f.StringVar(&input, "input", "", "JSON object, or @file.json")
	f.StringVar(&req.AcknowledgedSideEffect, "ack", "", "acknowledge the step's side effect class (idempotent, idempotency_key, unsafe)")
	f.IntVar(&req.TimeoutSeconds, "timeout", 0, "time limit in seconds (default 300; agent steps 900)")
	f.StringToStringVar(&req.ConnectionBindings, "connection", nil, "connection binding name=connection-id (repeatable)")
	f.StringToStringVar(&req.ReleaseBindings, "release", nil, "release binding name=release-id (repeatable)")
	f.StringVar(&mocks, "tool-mocks", "", "agent steps: JSON object of tool name to output, or @file.json")
	f.StringSliceVar(&req.RealTools, "real-tools", nil, "agent steps: tools that really run (comma-separated)")
	f.BoolVar(&wait, "wait", false, "follow the step test until it ends or waits for a person")
	f.BoolVar(&asJSON, "json", false, "print the step test as JSON")
	return cmd
}

// followStep polls a step test until it ends or waits, then prints it; it
// fails (exit 1) unless it succeeded or waits for an answer.
func (a *app) followStep(ctx context.Context, tg *target, id string, asJSON bool) error {
	last := ""
	for {
		v, err := tg.api().StepTest(ctx, tg.e(), id)
		if err != nil {
			return err
		}
		if v.Status != last {
			fmt.Fprintf(a.errw, "step test %s: %s\n", id, v.Status)
			last = v.Status
		}
		if v.Status != client.StepTestRunning {
			if err := a.showStep(v, asJSON); err != nil {
				return err
			}
			if v.Status == client.StepTestSucceeded || v.Status == client.StepTestWaiting {
				return nil
			}
			return fmt.Errorf("step test %s %s", v.ID, v.Status)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// showStep prints a step test.
func (a *app) showStep(v client.StepTest, asJSON bool) error {
	if asJSON {
		return a.printJSON(v)
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Step test %s %s\n", v.ID, v.Status)
	fmt.Fprintf(tw, "  step\t%s (%s) of draft %s revision %d\n", v.StepID, v.Kind, v.DraftID, v.DraftRevision)
	fmt.Fprintf(tw, "  run\t%s\n", v.RunID)
	fmt.Fprintf(tw, "  side effect\t%s\n", v.SideEffect)
	fmt.Fprintf(tw, "  expires\t%s\n", v.ExpiresAt.Local().Format(timeLayout))
	for _, p := range v.Pending {
		switch p.Kind {
		case "confirm":
			fmt.Fprintf(tw, "  pending\tconfirm %s (instance %s): call %s (%s) with %s\n", p.NodeID, p.InstanceKey, p.Tool, p.SideEffect, compactJSON(p.Input))
		case "review":
			fmt.Fprintf(tw, "  pending\treview %s (instance %s): answer %s\n", p.NodeID, p.InstanceKey, compactJSON(p.Output))
		default:
			fmt.Fprintf(tw, "  pending\t%s %s (instance %s; decisions %v)\n", p.Kind, p.NodeID, p.InstanceKey, p.Decisions)
		}
	}
	if len(v.Output) > 0 {
		fmt.Fprintf(tw, "  output\t%s\n", compactJSON(v.Output))
	}
	if len(v.Error) > 0 {
		fmt.Fprintf(tw, "  error\t%s\n", compactJSON(v.Error))
	}
	return tw.Flush()
}

// testOneCmd is a command on one step test: call answers it.
func (a *app) testOneCmd(t *envTarget, use, short, example string, nargs cobra.PositionalArgs,
	call func(ctx context.Context, tg *target, args []string) (client.StepTest, error)) *cobra.Command {
	return envOneCmd(a, t, &cobra.Command{Use: use, Short: short, Example: example, Args: nargs}, "step test", call,
		func(_ *target, v client.StepTest) error { return a.showStep(v, false) })
}

func (a *app) testShowCmd(t *envTarget) *cobra.Command {
	return a.testOneCmd(t, "show <step-test-id>", "Show a step test (yours only)", "  bridge test show <step-test-id> --json | jq .output",
		cobra.ExactArgs(1), func(ctx context.Context, tg *target, args []string) (client.StepTest, error) {
			return tg.api().StepTest(ctx, tg.e(), args[0])
		})
}

func (a *app) testCancelCmd(t *envTarget) *cobra.Command {
	return a.testOneCmd(t, "cancel <step-test-id>", "Cancel a step test (its run is cancelled)", "  bridge test cancel <step-test-id>",
		cobra.ExactArgs(1), func(ctx context.Context, tg *target, args []string) (client.StepTest, error) {
			return tg.api().CancelStepTest(ctx, tg.e(), args[0])
		})
}

func (a *app) testAnswerCmd(t *envTarget) *cobra.Command {
	var confirm bool
	cmd := a.testOneCmd(t, "answer <step-test-id> <instance-key>", "Answer a pending item of a waiting step test",
		"  bridge test answer <step-test-id> approve\n  bridge test answer <step-test-id> approve --confirm=false\n"+
			"  bridge test answer <step-test-id> 'triage#call.1'\n  bridge test answer <step-test-id> triage --confirm=false",
		cobra.ExactArgs(2), func(ctx context.Context, tg *target, args []string) (client.StepTest, error) {
			return tg.api().AnswerStepTest(ctx, tg.e(), args[0], client.StepTestAnswer{InstanceKey: args[1], Confirm: confirm})
		})
	cmd.Long = `Each item takes one answer. A person item is answered with the step's
first decision (--confirm, the default) or its last (--confirm=false). An
agent step's confirm item (a held call of a side-effecting real tool) runs
the call (--confirm) or refuses it (--confirm=false); its review item (the
agent's answer) applies the answer (--confirm) or rejects it, which fails
the step test (--confirm=false).`
	cmd.Flags().BoolVar(&confirm, "confirm", true, "true: the first decision, run the call, apply the answer; false: the last decision, refuse, reject")
	return cmd
}

func (a *app) testActivateCmd(t *envTarget) *cobra.Command {
	var req client.TestActivationRequest
	var defaults string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "activate <draft-id>",
		Short: "Activate a draft revision for a limited time (test runs, listen URLs)",
		Long: `Activates the draft revision (default: the latest) in the environment until
--expires seconds from now (default 900, at most 3600). A draft whose steps
have side effects needs --ack with the strongest class. Then start test runs
with 'bridge test run' or open a signed URL with 'bridge test listen'.`,
		Example: "  bridge test activate <draft-id> --ack idempotency_key\n  bridge test activate <draft-id> --expires 3600 --json | jq -r .id",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.DraftID = args[0]
			if defaults != "" {
				raw, err := jsonArg("defaults", defaults)
				if err != nil {
					return err
				}
				req.InputDefaults = raw
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			if req.DraftRevision == 0 {
				if req.DraftRevision, err = latestRevision(ctx, tg, req.DraftID); err != nil {
					return err
				}
			}
			ta, err := tg.api().ActivateTest(ctx, tg.e(), req)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(ta)
			}
			fmt.Fprintf(a.out, "Test activation %s of draft %s revision %d (side effect %s) until %s\n", ta.ID, ta.DraftID, ta.DraftRevision,
				ta.SideEffect, ta.ExpiresAt.Local().Format(timeLayout))
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&req.DraftRevision, "revision", 0, "the draft revision (default: the latest)")
	f.StringVar(&req.AcknowledgedSideEffect, "ack", "", "acknowledge the draft's strongest side effect class")
	f.IntVar(&req.ExpiresInSeconds, "expires", 0, "lifetime in seconds, 1..3600 (default 900)")
	f.StringVar(&defaults, "defaults", "", "input defaults: JSON object, or @file.json")
	f.StringToStringVar(&req.ConnectionBindings, "connection", nil, "connection binding name=connection-id (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print the test activation as JSON")
	return cmd
}

func (a *app) testRunCmd(t *envTarget) *cobra.Command {
	var input string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "run <test-activation-id>",
		Short:   "Start a test run of a test activation",
		Example: "  bridge test run <test-activation-id> --input '{\"base\":\"http://127.0.0.1:8088\"}'\n  bridge run get <run-id>",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req client.TestRunRequest
			if input != "" {
				raw, err := jsonArg("input", input)
				if err != nil {
					return err
				}
				req.Input = raw
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			run, err := tg.api().StartTestRun(ctx, tg.e(), args[0], req)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(run)
			}
			fmt.Fprintf(a.out, "Test run %s %s\n", run.ID, run.Status)
			return nil
		},
	}
	cmd.Flags().StringVar(&input, "input", "", "the run input: JSON object, or @file.json")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

func (a *app) testListenCmd(t *envTarget) *cobra.Command {
	var req client.ListenRequest
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "listen <test-activation-id>",
		Short: "Open a signed URL that starts a test run per request",
		Long: `Requests signed by the Standard Webhooks scheme to the printed URL start a test
run each (the JSON body is the input) until the test activation ends.
--secret-ref new makes a secret (printed once); trigger:<id> reuses a webhook
trigger's, so its sender can sign test requests unchanged. Send one with
'bridge test send', or any Standard Webhooks library.`,
		Example: "  bridge test listen <test-activation-id>\n  bridge test listen <test-activation-id> --secret-ref trigger:<trigger-id> --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			l, err := tg.api().Listen(ctx, tg.e(), args[0], req)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(l)
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "Listen route %s\n", l.ID)
			fmt.Fprintf(tw, "  url\t%s\n", tg.s.c.state.ServicesURL+l.TestURL)
			fmt.Fprintf(tw, "  until\t%s\n", l.ExpiresAt.Local().Format(timeLayout))
			if l.Secret != "" {
				fmt.Fprintf(tw, "  secret\t%s\n", l.Secret)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if l.Secret != "" {
				fmt.Fprintln(a.out, "Store the secret with the sender now: it is not shown again.")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&req.SecretRef, "secret-ref", client.TestSecretNew, "new, or trigger:<trigger-id>")
	cmd.Flags().IntVar(&req.MaxBody, "max-body", 0, "largest accepted body in bytes, 1..1048576 (default 1048576)")
	cmd.Flags().IntVar(&req.Tolerance, "tolerance", 0, "accepted webhook-timestamp skew in seconds, 1..3600 (default 300)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the listen route as JSON")
	return cmd
}

func (a *app) testDeactivateCmd(t *envTarget) *cobra.Command {
	return envOneCmd(a, t, &cobra.Command{
		Use:     "deactivate <test-activation-id>",
		Short:   "End a test activation now (its test runs stay readable)",
		Example: "  bridge test deactivate <test-activation-id>",
		Args:    cobra.ExactArgs(1),
	}, "test activation", func(ctx context.Context, tg *target, args []string) (client.TestActivation, error) {
		return tg.api().DeactivateTest(ctx, tg.e(), args[0])
	}, func(_ *target, ta client.TestActivation) error {
		_, err := fmt.Fprintf(a.out, "Test activation %s %s\n", ta.ID, ta.Status)
		return err
	})
}

func (a *app) testSendCmd() *cobra.Command {
	var secret, body, id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "send <listen-id> --body <json>",
		Short: "Sign and send a request to a listen URL: it starts a test run",
		Long: `Signs --body with the listen route's secret (--secret, else $` + secretEnv + `) by the
Standard Webhooks scheme and posts it to /test-webhooks/<listen-id> on the
running daemon, as 'bridge trigger send' does for triggers. Needs no sign-in.`,
		Example: `  export BRIDGE_TRIGGER_SECRET=whsec_...
  bridge test send <listen-id> --body '{"base":"http://127.0.0.1:8088"}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var d client.TestDelivery
			wid, err := a.sendSigned(cmd.Context(), "/test-webhooks/"+url.PathEscape(args[0]), secret, body, id, &d)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(d)
			}
			if d.Replayed {
				fmt.Fprintf(a.out, "Request %s was accepted before: test run %s (no new run)\n", wid, d.RunID)
				return nil
			}
			fmt.Fprintf(a.out, "Request %s accepted: test run %s started\n", wid, d.RunID)
			return nil
		},
	}
	cmd.Flags().StringVar(&secret, "secret", "", "the route's whsec_ secret (default $"+secretEnv+")")
	cmd.Flags().StringVar(&body, "body", "", "the run input: JSON, or @file.json; required")
	cmd.Flags().StringVar(&id, "id", "", "webhook-id (default: a new one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	requireFlags(cmd, "body")
	return cmd
}
