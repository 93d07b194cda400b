package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/client/callbacks"
	"github.com/agentbridge/bridge/config"
)

// Routes of the callback service (see callbacks/README.md).
const (
	callbackExecutionsPath = "/api/v1/callback-executions"
)

var executionStates = []string{
	callbacks.StatePending, callbacks.StateHeld, callbacks.StateSucceeded,
	callbacks.StateFailedRetrying, callbacks.StateFailedPermanent, callbacks.StateCancelled,
}

func (a *app) callbacksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "callbacks",
		Short: "Inspect callback deliveries, retry one, or replay events",
		Long: `Outbound callbacks deliver events to the configured endpoints; every attempt is
recorded as an execution. These commands talk to the running daemon with the
owner token. Configurations, subscriptions and authorized domains are managed
through the API (/api/v1/callback-configurations, ...; see /swagger-ui.html).`,
		Example: `  bridge callbacks executions --state FAILED_PERMANENT
  bridge callbacks retry 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e
  bridge callbacks replay --since 2h --config 0192a0c4-1111-7b2d-9c3e-4f5a6b7c8d9e`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.callbackExecutionsCmd(), a.callbackRetryCmd(), a.callbackReplayCmd())
	return cmd
}

func (a *app) callbackExecutionsCmd() *cobra.Command {
	var configID, state, eventType string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "executions",
		Short: "List delivery attempts, newest first",
		Long: `Lists executions (one per delivery attempt), newest first. States: PENDING,
HELD_CIRCUIT_OPEN, SUCCEEDED, FAILED_RETRYING, FAILED_PERMANENT, CANCELLED.
With --json the page is printed as the API returns it.`,
		Example: `  bridge callbacks executions
  bridge callbacks executions --config 0192a0c4-1111-7b2d-9c3e-4f5a6b7c8d9e --state FAILED_PERMANENT
  bridge callbacks executions --event-type push --limit 100 --json | jq '.content[].error'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 500 {
				return withCode(ExitUsage, fmt.Errorf("--limit must be 1 to 500, got %d", limit))
			}
			req := callbacks.FilterRequest{Size: &limit, Sort: []callbacks.SortOrder{{Field: "createdAt", Direction: "DESC"}}}
			if configID != "" {
				req.Filters = append(req.Filters, eqString("configurationId", configID))
			}
			if state != "" {
				state = strings.ToUpper(state)
				if !slices.Contains(executionStates, state) {
					return withCode(ExitUsage, fmt.Errorf("--state must be one of %s", strings.Join(executionStates, ", ")))
				}
				req.Filters = append(req.Filters, eqString("state", state))
			}
			if eventType != "" {
				req.Filters = append(req.Filters, eqString("eventType", eventType))
			}
			c, err := a.daemonClient(cmd.Context())
			if err != nil {
				return err
			}
			var page callbacks.PaginationResponse[callbacks.Execution]
			if err := c.do(cmd.Context(), http.MethodPost, c.state.ServicesURL, callbackExecutionsPath+"/filter", req, &page); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(page)
			}
			a.printExecutions(page)
			return nil
		},
	}
	cmd.Flags().StringVar(&configID, "config", "", "only this configuration's executions (its id)")
	cmd.Flags().StringVar(&state, "state", "", "only executions in this state")
	cmd.Flags().StringVar(&eventType, "event-type", "", "only executions of this event type")
	cmd.Flags().IntVar(&limit, "limit", 20, "most executions shown (1 to 500)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the page as JSON")
	return cmd
}

func eqString(field, v string) callbacks.FieldFilter {
	data, _ := json.Marshal(v)
	return callbacks.FieldFilter{Field: field, Operator: "eq", Value: data}
}

func (a *app) printExecutions(page callbacks.PaginationResponse[callbacks.Execution]) {
	if len(page.Content) == 0 {
		fmt.Fprintln(a.out, "no executions")
		return
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tATTEMPT\tCONFIGURATION\tEVENT TYPE\tHTTP\tCREATED\tERROR")
	for _, e := range page.Content {
		status := "-"
		if e.Response != nil {
			status = fmt.Sprint(e.Response.Status)
		}
		// The error is the last column and is printed whole: its end often
		// says what to do (e.g. which ssrf setting allows an address).
		errText := ""
		if e.Error != nil {
			errText = e.Error.Code + ": " + e.Error.Message
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.State, e.Attempt, e.MaxAttempts,
			e.ConfigurationName, e.EventType, status, e.CreatedAt.Local().Format(time.DateTime), oneLine(errText))
	}
	tw.Flush()
	if page.HasNext {
		fmt.Fprintf(a.out, "(%d of %d shown; use --limit or --json for more)\n", len(page.Content), page.TotalElements)
	}
}

func (a *app) callbackRetryCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "retry <execution-id>",
		Short: "Deliver a finished execution's event again",
		Long: `Starts a new delivery of the execution's event to its configuration (attempt 1,
trigger MANUAL_RETRY, with a full budget of retries). The execution must be
finished (not PENDING or HELD_CIRCUIT_OPEN), its configuration ACTIVE and its
domain still authorized.`,
		Example: `  bridge callbacks retry 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e
  bridge callbacks retry 0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.daemonClient(cmd.Context())
			if err != nil {
				return err
			}
			var ex callbacks.Execution
			body := callbacks.RetryRequest{ExecutionID: args[0]}
			if err := c.do(cmd.Context(), http.MethodPost, c.state.ServicesURL, callbackExecutionsPath+"/retry", body, &ex); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(ex)
			}
			fmt.Fprintf(a.out, "retrying: new execution %s (%s) for event %s to %s\n", ex.ID, ex.State, ex.EventID, ex.ConfigurationName)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the new execution as JSON")
	return cmd
}

func (a *app) callbackReplayCmd() *cobra.Command {
	var since, until, configID string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "replay --since <RFC3339|duration>",
		Short: "Deliver the events received since a time again",
		Long: `Every event the callback service received in the window becomes a new delivery
(trigger REPLAY) to each ACTIVE configuration subscribed to its type, or only
to --config. --since takes an RFC 3339 time or a duration back from now (90m,
2h, PT1H); --until defaults to now. At most --limit events are replayed,
oldest first; the answer says when more matched.`,
		Example: `  bridge callbacks replay --since 2h
  bridge callbacks replay --since 2025-06-01T08:00:00Z --until 2025-06-01T09:00:00Z --config 0192a0c4-1111-7b2d-9c3e-4f5a6b7c8d9e`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, err := parseSince(since, time.Now())
			if err != nil {
				return withCode(ExitUsage, err)
			}
			req := callbacks.ReplayRequest{Since: from.UTC().Format(time.RFC3339Nano), ConfigurationID: configID}
			if until != "" {
				t, err := time.Parse(time.RFC3339Nano, until)
				if err != nil {
					return withCode(ExitUsage, fmt.Errorf("--until must be an RFC 3339 time such as 2025-06-01T09:00:00Z"))
				}
				req.Until = t.UTC().Format(time.RFC3339Nano)
			}
			if cmd.Flags().Changed("limit") {
				if limit < 1 || limit > 10000 {
					return withCode(ExitUsage, fmt.Errorf("--limit must be 1 to 10000, got %d", limit))
				}
				req.Limit = &limit
			}
			c, err := a.daemonClient(cmd.Context())
			if err != nil {
				return err
			}
			var res callbacks.ReplayResult
			if err := c.do(cmd.Context(), http.MethodPost, c.state.ServicesURL, callbackExecutionsPath+"/replay", req, &res); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.out, "replayed %d events: %d deliveries scheduled\n", res.Events, res.Deliveries)
			if res.Truncated && res.LastReceivedAt != nil {
				fmt.Fprintf(a.out, "more events matched; continue with --since %s\n", res.LastReceivedAt.Format(time.RFC3339Nano))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "start of the window: RFC 3339 time or a duration back from now (required)")
	cmd.Flags().StringVar(&until, "until", "", "end of the window, RFC 3339 (default now)")
	cmd.Flags().StringVar(&configID, "config", "", "replay to this configuration only (its id)")
	cmd.Flags().IntVar(&limit, "limit", 1000, "most events replayed (1 to 10000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	_ = cmd.MarkFlagRequired("since")
	return cmd
}

// parseSince reads an RFC 3339 time or a duration back from now.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := config.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, errors.New("--since must be an RFC 3339 time (2025-06-01T08:00:00Z) or a positive duration (90m, 2h, PT1H)")
	}
	return now.Add(-d), nil
}
