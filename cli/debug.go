package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/bridge/client"

	"github.com/spf13/cobra"
)

// debugCmd is the terminal debugger: an editor host debug session
// (/studio/local/debug/sessions, docs/platform-api.md "Editor host") driven
// from a prompt or a script.
func (a *app) debugCmd() *cobra.Command {
	var input, mocks, catalog, script string
	var defs []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "debug FILE.yaml",
		Short: "Step through a workflow with mocks and a virtual clock (nothing is called)",
		Long: `Opens a debug session of the workflow in FILE on the running daemon's editor
host and reads commands from the terminal (or --script):

  b NODE [NODE...]   set the breakpoints (b with no node clears them)
  n                  enter the next node (answering mocks of work already issued)
  c                  continue to a breakpoint, a wait or the end
  signal NAME JSON   send a signal with its payload
  decide STEP JSON   complete the human task of STEP: {"decision": ..., "data": ...}
  advance DURATION   move the virtual clock (1h, 90s, 2h30m)
  vars               show the run's input, variables, step outputs and output
  q                  close the session and quit

Mocks (--mock) map action:<reference>, node:<node id> or workflow:<reference>
to an outcome {output}, {error: {code}, retryable} or {outcome: "unknown"},
or to a list of outcomes used one per call. The session runs the same kernel
as production runs; no connector, worker or network is ever called.

Exit codes: 0 ok, 1 a command was refused or the run ended failed, timed out
or cancelled, 2 usage, 3 daemon not running.`,
		Example: `  bridge debug order.yaml --input @in.json --mock @mocks.json
  bridge debug order.yaml --input '{"orderId":"o-1"}' --mock '{"action:acme/charge@1":{"output":{"ok":true}}}'
  printf 'b ship\nc\nvars\nc\n' | bridge debug order.yaml --mock @mocks.json --script -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return withCode(ExitUsage, err)
			}
			body := map[string]any{"source": string(src)}
			for flag, v := range map[string]string{"input": input, "mock": mocks, "catalog": catalog} {
				if v == "" {
					continue
				}
				data, err := jsonObjectArg(flag, v)
				if err != nil {
					return err
				}
				body[map[string]string{"input": "input", "mock": "mocks", "catalog": "catalog"}[flag]] = data
			}
			var sources []string
			for _, d := range defs {
				data, err := os.ReadFile(d)
				if err != nil {
					return withCode(ExitUsage, err)
				}
				sources = append(sources, string(data))
			}
			if len(sources) > 0 {
				body["definitions"] = sources
			}
			in := cmd.InOrStdin()
			interactive := script == ""
			if script != "" && script != "-" {
				f, err := os.Open(script)
				if err != nil {
					return withCode(ExitUsage, err)
				}
				defer f.Close()
				in = f
			}
			return a.debugSession(cmd.Context(), body, in, interactive, asJSON)
		},
	}
	cmd.Flags().StringVar(&input, "input", "", "run input: JSON object or @file")
	cmd.Flags().StringVar(&mocks, "mock", "", "mocks: JSON object or @file")
	cmd.Flags().StringVar(&catalog, "catalog", "", "catalog lock to compile against: JSON or @file (default: the installed adapters only)")
	cmd.Flags().StringArrayVar(&defs, "definition", nil, "a local action, decision table or workflow source FILE the workflow references; repeatable")
	cmd.Flags().StringVar(&script, "script", "", "read commands from FILE ('-' for stdin) without prompts, for CI")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each session as JSON")
	return cmd
}

// debugView is what the debugger shows of a session (camelCase).
type debugView struct {
	ID       string `json:"id"`
	Revision int64  `json:"revision"`
	View     struct {
		Status       string          `json:"status"`
		SelectedNode *string         `json:"selectedNode"`
		ActiveNodes  []string        `json:"activeNodes"`
		Variables    json.RawMessage `json:"variables"`
		Breakpoints  []string        `json:"breakpoints"`
		Diagnostics  []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"diagnostics"`
		Boundary *struct {
			Kind   string `json:"kind"`
			NodeID string `json:"nodeId"`
			Waits  []struct {
				Kind      string   `json:"kind"`
				NodeID    string   `json:"nodeId"`
				Signal    string   `json:"signal"`
				Decisions []string `json:"decisions"`
				Due       string   `json:"due"`
			} `json:"waits"`
		} `json:"boundary"`
		Now string `json:"now"`
	} `json:"view"`
}

func (a *app) debugSession(ctx context.Context, body map[string]any, in io.Reader, interactive, asJSON bool) error {
	c, err := a.daemonClient(ctx)
	if err != nil {
		return err
	}
	call := func(method, path string, hdr map[string]string, body any) (debugView, json.RawMessage, error) {
		var raw json.RawMessage
		_, err := c.api(c.state.ServicesURL).Do(ctx, method, path, hdr, body, &raw)
		var v debugView
		if err == nil && len(raw) > 0 {
			err = json.Unmarshal(raw, &v)
		}
		return v, raw, err
	}
	s, raw, err := call(http.MethodPost, client.StudioSessions, nil, body)
	if err != nil {
		return err
	}
	defer func() { _, _, _ = call(http.MethodDelete, client.StudioSessions+"/"+s.ID, nil, nil) }()
	show := func(v debugView, raw json.RawMessage) {
		if asJSON {
			fmt.Fprintln(a.out, string(raw))
			return
		}
		line := "status " + v.View.Status
		if v.View.SelectedNode != nil {
			line += ", next node " + *v.View.SelectedNode
		}
		if b := v.View.Boundary; b != nil && b.Kind == "breakpoint" {
			line += " (breakpoint)"
		}
		fmt.Fprintf(a.out, "%s, virtual time %s\n", line, v.View.Now)
		if b := v.View.Boundary; b != nil {
			for _, w := range b.Waits {
				switch w.Kind {
				case "signal":
					fmt.Fprintf(a.out, "  waits for signal %s at %s\n", w.Signal, w.NodeID)
				case "human":
					fmt.Fprintf(a.out, "  waits for a person at %s (%s)\n", w.NodeID, strings.Join(w.Decisions, ", "))
				case "timer":
					fmt.Fprintf(a.out, "  waits at %s until %s\n", w.NodeID, w.Due)
				}
			}
		}
		for _, d := range v.View.Diagnostics {
			fmt.Fprintf(a.out, "  %s: %s\n", d.Code, d.Message)
		}
	}
	show(s, raw)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	refused := false
	for {
		if interactive {
			fmt.Fprint(a.out, "(debug) ")
		}
		if !sc.Scan() {
			break
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !interactive {
			fmt.Fprintln(a.out, "> "+line)
		}
		if line == "q" || line == "quit" {
			break
		}
		if line == "vars" {
			var pretty any
			_ = json.Unmarshal(s.View.Variables, &pretty)
			out, _ := json.MarshalIndent(pretty, "", "  ")
			fmt.Fprintln(a.out, string(out))
			continue
		}
		command, err := debugCommand(line)
		if err != nil {
			fmt.Fprintln(a.errw, err)
			refused = true
			continue
		}
		next, raw, err := call(http.MethodPost, client.StudioSessions+"/"+s.ID+"/commands",
			map[string]string{"If-Match": strconv.FormatInt(s.Revision, 10)}, command)
		if err != nil {
			fmt.Fprintln(a.errw, err)
			refused = true
			continue
		}
		s = next
		show(s, raw)
	}
	switch {
	case refused && !interactive:
		return errors.New("a command was refused")
	case s.View.Status == "failed" || s.View.Status == "timed_out" || s.View.Status == "cancelled":
		return fmt.Errorf("the run ended %s", s.View.Status)
	}
	return nil
}

// debugCommand turns a prompt line into a camelCase debug command.
func debugCommand(line string) (map[string]any, error) {
	f := strings.Fields(line)
	rest := func(n int) string {
		parts := strings.SplitN(line, " ", n+1)
		if len(parts) <= n {
			return ""
		}
		return strings.TrimSpace(parts[n])
	}
	switch f[0] {
	case "b", "break":
		return map[string]any{"breakpoints": map[string]any{"nodeIds": append([]string{}, f[1:]...)}}, nil
	case "n", "next":
		return map[string]any{"next": map[string]any{}}, nil
	case "c", "continue":
		return map[string]any{"continue": map[string]any{}}, nil
	case "signal":
		if len(f) < 2 {
			return nil, errors.New("usage: signal NAME JSON")
		}
		payload := json.RawMessage("null")
		if p := rest(2); p != "" {
			if !json.Valid([]byte(p)) {
				return nil, errors.New("the signal payload is not valid JSON")
			}
			payload = json.RawMessage(p)
		}
		return map[string]any{"signal": map[string]any{"name": f[1], "payload": payload}}, nil
	case "decide":
		p := rest(2)
		if len(f) < 3 || !json.Valid([]byte(p)) {
			return nil, errors.New(`usage: decide STEP {"decision": "...", "data": {...}}`)
		}
		return map[string]any{"humanDecision": map[string]any{"name": f[1], "payload": json.RawMessage(p)}}, nil
	case "advance":
		if len(f) != 2 {
			return nil, errors.New("usage: advance DURATION (1h, 90s)")
		}
		d, err := time.ParseDuration(f[1])
		if err != nil || d < 0 || d%time.Second != 0 {
			return nil, errors.New("advance takes a whole number of seconds as a duration: 1h, 90s, 2h30m")
		}
		return map[string]any{"advanceTime": map[string]any{"seconds": int64(d / time.Second)}}, nil
	}
	return nil, fmt.Errorf("unknown command %q: b NODE, n, c, signal NAME JSON, decide STEP JSON, advance 1h, vars, q", f[0])
}
