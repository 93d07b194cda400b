package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/client/ingest"
)

// Routes of the ingest service's management API (see ingest/api.go).
const (
	webhookStreamPath = "/api/v1/webhook-events/stream"
	webhookDLQPath    = "/api/v1/webhook-dlq"
)

// The ingest management API's wire types.
type (
	webhookActivity = ingest.Activity
	deadLetter      = ingest.DLQEntry
)

func (a *app) webhooksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhooks",
		Short: "Watch inbound webhooks and manage their dead-letter queue",
		Long: `Inbound webhooks arrive at POST /api/v1/webhook/{provider} on the services
listener. These commands talk to the running daemon with the owner token.`,
		Example: `  bridge webhooks tail --provider github
  bridge webhooks dlq list
  bridge webhooks dlq replay 01928c3e-5f7a-7b3c-9d2e-4f5a6b7c8d9e`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.webhooksTailCmd(), a.webhooksDLQCmd())
	return cmd
}

func (a *app) webhooksTailCmd() *cobra.Command {
	var provider string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Show webhooks as they arrive, are verified, rejected or dead-lettered",
		Long: `Streams webhook activity live until interrupted (Ctrl-C): accepted (published
and acknowledged), rejected (refused at ingestion), failed (publication or
verification failed; dead-lettered), verified, unverified and duplicate
(processor outcomes) and replayed (republished from the DLQ).

Only activity from the moment tail connects is shown. With --json each line is
one JSON object.`,
		Example: `  bridge webhooks tail
  bridge webhooks tail --provider github
  bridge webhooks tail --json | jq -r 'select(.kind=="failed") | .reason'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.tailWebhooks(cmd.Context(), provider, asJSON)
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "only this provider's webhooks")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	return cmd
}

func (a *app) tailWebhooks(ctx context.Context, provider string, asJSON bool) error {
	c, err := a.daemonClient(ctx)
	if err != nil {
		return err
	}
	path := webhookStreamPath
	if provider != "" {
		path += "?provider=" + url.QueryEscape(provider)
	}
	// No client timeout: the stream lasts until the user stops it.
	resp, err := c.api(c.state.ServicesURL).Streaming().Send(ctx, http.MethodGet, path, map[string]string{"Accept": "text/event-stream"}, nil)
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return err
	case err != nil && ctx.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("tail: %w", errors.Unwrap(err))
	}
	defer resp.Body.Close()
	if !asJSON {
		fmt.Fprintln(a.errw, "waiting for webhooks (Ctrl-C to stop)...")
	}
	err = readSSE(resp.Body, func(event, data string) error {
		switch event {
		case "lagged":
			fmt.Fprintf(a.errw, "warning: tail fell behind and missed events: %s\n", data)
		case "activity":
			if asJSON {
				_, err := fmt.Fprintln(a.out, data)
				return err
			}
			var act webhookActivity
			if err := json.Unmarshal([]byte(data), &act); err != nil {
				return fmt.Errorf("tail: bad event: %w", err)
			}
			a.printActivity(act)
		}
		return nil
	})
	if ctx.Err() != nil {
		return nil // interrupted: a normal end
	}
	if err == nil {
		return errors.New("tail: the daemon closed the stream (shutting down?)")
	}
	return err
}

func (a *app) printActivity(act webhookActivity) {
	detail := act.Topic
	if act.Reason != "" {
		detail = act.Reason
	}
	if act.DeliveryID != "" {
		detail += " delivery=" + act.DeliveryID
	}
	if act.Status != 0 {
		detail += " http=" + strconv.Itoa(act.Status)
	}
	if act.Size > 0 {
		detail += " " + strconv.Itoa(act.Size) + "B"
	}
	fmt.Fprintf(a.out, "%s  %-10s %-16s %s  %s\n", act.Time.Local().Format("15:04:05.000"), act.Kind, act.Provider, act.EventID, strings.TrimSpace(detail))
}

// readSSE calls fn for every event of a text/event-stream until EOF.
func readSSE(r io.Reader, fn func(event, data string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	event, data := "", []string{}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				if event == "" {
					event = "message"
				}
				if err := fn(event, strings.Join(data, "\n")); err != nil {
					return err
				}
			}
			event, data = "", data[:0]
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return sc.Err()
}

func (a *app) webhooksDLQCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List and replay dead-lettered webhooks",
		Long: `Webhooks that were refused at ingestion, could not be published, or failed
processing (for example a bad signature) are dead-lettered with their reason.`,
		Example: `  bridge webhooks dlq list --pending
  bridge webhooks dlq replay --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.dlqListCmd(), a.dlqReplayCmd())
	return cmd
}

func (a *app) dlqListCmd() *cobra.Command {
	var asJSON, pending bool
	var limit int
	var provider string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead-lettered webhooks, most recently failed first",
		Long: `Lists dead letters with their stage (ingest, publish or process), reason, HTTP
status answered, failure count and replay state. REPLAYABLE is "yes" when the
payload was kept (not for oversized bodies) and the provider name is valid.`,
		Example: `  bridge webhooks dlq list
  bridge webhooks dlq list --provider stripe --pending --limit 10
  bridge webhooks dlq list --json | jq -r '.[].event_id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 10000 {
				return withCode(ExitUsage, errors.New("--limit must be 1..10000"))
			}
			c, err := a.daemonClient(cmd.Context())
			if err != nil {
				return err
			}
			items, err := listDeadLetters(cmd.Context(), c, provider, pending, limit)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(items)
			}
			if len(items) == 0 {
				fmt.Fprintln(a.out, "no dead letters")
				return nil
			}
			tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "EVENT ID\tPROVIDER\tSTAGE\tREASON\tHTTP\tFAILED AT\tFAILURES\tREPLAYS\tREPLAYABLE")
			for _, e := range items {
				status := "-"
				if e.Status != 0 {
					status = strconv.Itoa(e.Status)
				}
				replayable := "no"
				if e.Replayable {
					replayable = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", e.EventID, e.Provider, e.Stage, e.Reason, status,
					e.FailedAt.Local().Format(time.DateTime), e.Failures, e.Replays, replayable)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().IntVar(&limit, "limit", 50, "show at most this many (1..10000)")
	cmd.Flags().StringVar(&provider, "provider", "", "only this provider's dead letters")
	cmd.Flags().BoolVar(&pending, "pending", false, "only dead letters not replayed since they last failed")
	return cmd
}

// listDeadLetters follows the API's cursors until limit entries are read.
func listDeadLetters(ctx context.Context, c *daemonConn, provider string, pending bool, limit int) ([]deadLetter, error) {
	out := []deadLetter{}
	cursor := ""
	for len(out) < limit {
		q := url.Values{}
		q.Set("limit", strconv.Itoa(min(limit-len(out), 500)))
		if provider != "" {
			q.Set("provider", provider)
		}
		if pending {
			q.Set("pending", "true")
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page ingest.Page[deadLetter]
		if err := c.do(ctx, http.MethodGet, c.state.ServicesURL, webhookDLQPath+"?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	return out, nil
}

func (a *app) dlqReplayCmd() *cobra.Command {
	var all, asJSON bool
	var provider string
	cmd := &cobra.Command{
		Use:   "replay <event-id> | --all",
		Short: "Republish dead-lettered webhooks to their provider's topic",
		Long: `Republishes a dead letter's original payload and headers, under the same event
id, to the topic its provider maps to now; processors verify it again. With
--all every pending, replayable dead letter is replayed (optionally one
provider's). A dead letter without its payload (an oversized body) cannot be
replayed.`,
		Example: `  bridge webhooks dlq replay 01928c3e-5f7a-7b3c-9d2e-4f5a6b7c8d9e
  bridge webhooks dlq replay --all --provider github`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case all && len(args) > 0:
				return withCode(ExitUsage, errors.New("give an event id or --all, not both"))
			case !all && len(args) != 1:
				return withCode(ExitUsage, errors.New("give one event id, or --all"))
			case !all && provider != "":
				return withCode(ExitUsage, errors.New("--provider only applies with --all"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.daemonClient(ctx)
			if err != nil {
				return err
			}
			ids := args
			if all {
				items, err := listDeadLetters(ctx, c, provider, true, 1_000_000)
				if err != nil {
					return err
				}
				ids = nil
				for _, e := range items {
					if e.Replayable {
						ids = append(ids, e.EventID)
					}
				}
			}
			var replayed []deadLetter
			var failed int
			for _, id := range ids {
				var e deadLetter
				if err := c.do(ctx, http.MethodPost, c.state.ServicesURL, webhookDLQPath+"/"+url.PathEscape(id)+"/replay", nil, &e); err != nil {
					if !all {
						return err
					}
					failed++
					fmt.Fprintf(a.errw, "replay %s: %v\n", id, err)
					continue
				}
				replayed = append(replayed, e)
				if !asJSON {
					fmt.Fprintf(a.out, "replayed %s (%s) to %s\n", e.EventID, e.Provider, e.Topic)
				}
			}
			if asJSON {
				if err := a.printJSON(replayed); err != nil {
					return err
				}
			} else if all {
				fmt.Fprintf(a.out, "%d replayed, %d failed\n", len(replayed), failed)
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d replays failed", failed, len(ids))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "replay every pending, replayable dead letter")
	cmd.Flags().StringVar(&provider, "provider", "", "with --all: only this provider's")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the replayed entries as JSON")
	return cmd
}
