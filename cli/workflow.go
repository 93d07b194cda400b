package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/platform/lang"
)

func (a *app) workflowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflow",
		Short: "Compile and validate workflow definitions locally",
		Long: `Works on workflow-language files (see docs/workflow-language.md) without a
daemon. With --catalog, the result (diagnostics, source map, artifact digest) is
byte for byte what the platform's POST .../compiler/compile answers for the same
source, filename and catalog lock.`,
		Example: `  bridge workflow compile order.yaml
  bridge workflow compile order.yaml --catalog catalog.lock.json --json > result.json
  bridge workflow validate order.yaml`,
	}
	cmd.AddCommand(a.compileCmd(false), a.compileCmd(true))
	a.addPublishCmds(cmd)
	return cmd
}

// compileCmd builds `workflow compile` or `workflow validate`.
func (a *app) compileCmd(validate bool) *cobra.Command {
	var catalogPath string
	var strict, asJSON bool
	use, short := "compile FILE", "Compile a definition and print its diagnostics"
	example := `  bridge workflow compile order.yaml
  bridge workflow compile order.yaml --catalog catalog.lock.json --strict
  bridge workflow compile order.yaml --json | jq -r .digest`
	if validate {
		use, short = "validate FILE", "Validate a definition (partial without a catalog lock)"
		example = `  bridge workflow validate order.yaml
  bridge workflow validate order.yaml --catalog catalog.lock.json --json`
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

Prints file:line:column diagnostics. Exit code 0 when the definition compiles
(warnings allowed); 4 when the result is partial: no errors, but references
left unresolved because no --catalog lock was given (or it lacks them); 1 when
it has errors (with --strict, warnings count as errors). --json prints the
compiler result exactly as the platform's HTTP API does (ok, partial,
artifact, digest, source_map, diagnostics). 'bridge workflow catalog' prints
your project's catalog lock.`,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("read definition: %w", err)
			}
			if len(src) > lang.MaxSourceBytes {
				return fmt.Errorf("%s is larger than %d bytes", args[0], lang.MaxSourceBytes)
			}
			opts := lang.Options{Filename: filepath.Base(args[0]), Strict: strict}
			if catalogPath != "" {
				data, err := os.ReadFile(catalogPath)
				if err != nil {
					return fmt.Errorf("read catalog lock: %w", err)
				}
				if opts.Catalog, err = lang.ParseCatalogLock(data); err != nil {
					return fmt.Errorf("catalog lock %s: %w", catalogPath, err)
				}
			}
			var res lang.Result
			var encoded []byte
			if validate {
				vr := lang.Validate(src, opts)
				res = vr.Result
				encoded, err = vr.Encode()
			} else {
				res = lang.Compile(src, opts)
				encoded, err = res.Encode()
			}
			if err != nil {
				return err
			}
			if asJSON {
				// A trailing newline, as every platform API body has: the
				// output is then byte for byte the HTTP response body.
				if _, err := a.out.Write(append(encoded, '\n')); err != nil {
					return err
				}
			} else {
				a.printDiagnostics(args[0], res)
			}
			switch compileOutcome(res) {
			case outcomePartial:
				return withCode(ExitPartial, fmt.Errorf(""))
			case outcomeFailed:
				return withCode(ExitError, fmt.Errorf(""))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&catalogPath, "catalog", "", "catalog lock (JSON) to resolve references against")
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the compiler result as JSON (as the HTTP API does)")
	return cmd
}

// Outcomes of a compile, each with its exit code (see compileCmd).
const (
	outcomeOK      = "ok"
	outcomePartial = "partial"
	outcomeFailed  = "failed"
)

func compileOutcome(res lang.Result) string {
	errs, _ := countDiagnostics(res)
	switch {
	case res.OK:
		return outcomeOK
	case res.Partial && errs == 0:
		return outcomePartial
	default:
		return outcomeFailed
	}
}

func countDiagnostics(res lang.Result) (errs, warns int) {
	for _, d := range res.Diagnostics {
		switch d.Severity {
		case "error":
			errs++
		case "warning":
			warns++
		}
	}
	return errs, warns
}

func (a *app) printDiagnostics(file string, res lang.Result) {
	for _, d := range res.Diagnostics {
		fmt.Fprintf(a.out, "%s:%d:%d: %s %s: %s\n", file, d.Range.Start.Line, d.Range.Start.Column, d.Severity, d.Code, d.Message)
	}
	errs, warns := countDiagnostics(res)
	switch compileOutcome(res) {
	case outcomeOK:
		fmt.Fprintf(a.out, "ok: %s compiles (%d warning(s)); digest %s\n", file, warns, res.Digest)
	case outcomePartial:
		fmt.Fprintf(a.out, "partial: %s has unresolved references (%d warning(s)); pass --catalog to resolve them (see 'bridge workflow catalog')\n", file, warns)
	default:
		fmt.Fprintf(a.out, "failed: %d error(s), %d warning(s)\n", errs, warns)
	}
}
