package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/store"
)

func (a *app) migrateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations",
		Long: `Applies the pending schema migrations of bridge.db, in order, and prints what
it applied. A data directory created by an older bridge must be migrated before
'bridge serve' will start on it. Stop the daemon first.`,
		Example: `  bridge migrate
  bridge migrate --data-dir /tmp/bridge-dev --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.dir()
			if err != nil {
				return err
			}
			if err := ensureDir(dir); err != nil {
				return err
			}
			// The lock a running daemon holds, not its health: a busy or
			// restricted daemon answers 503 but still has bridge.db open,
			// and while migrate holds it no daemon starts on dir.
			release, err := daemon.LockDataDir(dir)
			if errors.Is(err, daemon.ErrInUse) {
				if st, serr := daemon.ReadState(dir); serr == nil {
					return fmt.Errorf("the daemon is running (pid %d); stop it before migrating", st.PID)
				}
				return fmt.Errorf("%w (%s); stop it before migrating", err, dir)
			}
			if err != nil {
				return err
			}
			defer release()
			side, err := a.side()
			if err != nil {
				return err
			}
			applied, err := store.Migrate(cmd.Context(), filepath.Join(dir, daemon.DatabaseFile), side.Migrations())
			if err != nil {
				return err
			}
			if asJSON {
				names := make([]string, 0, len(applied))
				for _, m := range applied {
					names = append(names, m.Name)
				}
				return a.printJSON(map[string]any{"applied": names})
			}
			if len(applied) == 0 {
				fmt.Fprintln(a.out, "Database is up to date; nothing to apply.")
				return nil
			}
			for _, m := range applied {
				fmt.Fprintf(a.out, "applied %s\n", m.Name)
			}
			fmt.Fprintf(a.out, "%d migration(s) applied.\n", len(applied))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the applied migrations as JSON")
	return cmd
}
