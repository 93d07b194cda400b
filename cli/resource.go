package cli

import (
	"context"

	"github.com/spf13/cobra"
)

// The commands on an environment's resources share two shapes: a list
// (every page, a table or a JSON array) and a command on one resource
// (read or change it, then show it or print it as JSON).

// envListCmd completes cmd, which carries the help text: it reads every page
// of path() in the environment and prints the items as a table (header,
// one row each; empty when there are none) or, with --json, as a JSON
// array of the things named by plural.
func envListCmd[T any](a *app, t *envTarget, cmd *cobra.Command, plural string, path func(tg *target) string,
	empty, header string, row func(T) []string) *cobra.Command {
	var asJSON bool
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, tg, err := t.openEnv(cmd, a)
		if err != nil {
			return err
		}
		items, err := collectPages[T](ctx, tg.s, path(tg), false)
		if err != nil {
			return err
		}
		return printTable(a, items, asJSON, empty, header, row)
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the "+plural+" as a JSON array")
	return cmd
}

// envOneCmd completes cmd, which carries the help text and its Args: call
// reads or changes one resource (named by singular) and answers it, show
// prints it for people and --json prints it as JSON.
func envOneCmd[T any](a *app, t *envTarget, cmd *cobra.Command, singular string,
	call func(ctx context.Context, tg *target, args []string) (T, error), show func(tg *target, v T) error) *cobra.Command {
	var asJSON bool
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx, tg, err := t.openEnv(cmd, a)
		if err != nil {
			return err
		}
		v, err := call(ctx, tg, args)
		if err != nil {
			return err
		}
		if asJSON {
			return a.printJSON(v)
		}
		return show(tg, v)
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the "+singular+" as JSON")
	return cmd
}
