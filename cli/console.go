package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/agentbridge/bridge/client"

	"github.com/spf13/cobra"
)

func (a *app) consoleCmd() *cobra.Command {
	var noOpen, asJSON bool
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Open the web console of the running daemon in a browser",
		Long: `Opens the daemon's web console (served on the bridge listener at /console/)
with a sign-in code that is valid once, for 60 seconds. The code travels in the
address's fragment, which the browser never sends to a server; the page trades
it for a session cookie. No token ever appears in an address.

Without a browser (or with --no-open), open the printed address yourself. On
the console's sign-in page, pasting the owner token (owner.token in the data
directory) also works. 'bridge revoke --id owner' signs every console session
out; so does restarting the daemon.`,
		Example: `  bridge console
  bridge console --no-open
  bridge console --json | jq -r .url`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := a.daemonClient(ctx)
			if err != nil {
				return err
			}
			var out client.ConsoleCode
			if err := c.do(ctx, "POST", c.state.BridgeURL, "/console/api/codes", struct{}{}, &out); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.out, "Console: %s\n", c.state.BridgeURL+client.ConsolePath)
			if !noOpen {
				if err := openBrowser(out.URL); err == nil {
					fmt.Fprintf(a.out, "Opened in your browser (the sign-in code is valid once, until %s).\n", out.ExpiresAt.Local().Format(time.TimeOnly))
					return nil
				}
			}
			fmt.Fprintf(a.out, "Open this address within 60 seconds to sign in (valid once):\n  %s\n", out.URL)
			return nil
		},
	}
	cmd.Flags().BoolVar(&noOpen, "no-open", false, "print the sign-in address instead of opening a browser")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {code, url, expiresAt} as JSON and open nothing")
	return cmd
}

// openBrowser hands url to the desktop's opener; it fails where there is
// none (a server, CI), and the address is printed instead.
func openBrowser(url string) error {
	var name string
	var args []string
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler"}
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no desktop session")
		}
		name = "xdg-open"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return err
	}
	// Not bound to ctx: the opener must outlive this command.
	cmd := exec.Command(path, append(args, url)...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
