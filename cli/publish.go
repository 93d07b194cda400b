package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentbridge/bridge/client"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/platform/lang"
)

// kindCollections maps a definition kind to its collection under P.
var kindCollections = map[string]string{
	lang.KindWorkflow:      "workflows",
	lang.KindAction:        "actions",
	lang.KindConnector:     "connectors",
	lang.KindDecisionTable: "decision-tables",
}

// addPublishCmds adds publish, activate and activations to the workflow
// command, which then also talks to the daemon.
func (a *app) addPublishCmds(cmd *cobra.Command) {
	cmd.Short = "Compile and validate definitions locally; publish and activate them"
	cmd.Long += `

Unlike compile and validate, publish, activate and activations talk to the
running daemon's platform API with your platform sign-in (see 'bridge
platform'), in your only project and environment, else the local workspace's
(--tenant, --project and --environment choose others). Then start runs with
'bridge run start'.`
	cmd.Example += `
  bridge workflow publish actions.yaml flow.yaml
  bridge workflow activate acme/flow
  bridge workflow activations`
	cmd.Example += `
  bridge workflow catalog > catalog.lock.json`
	cmd.AddCommand(a.workflowPublishCmd(), a.workflowActivateCmd(), a.workflowActivationsCmd(), a.workflowCatalogCmd())
}

// workflowCatalogCmd prints the project's catalog lock, the file that
// 'workflow compile --catalog' takes.
func (a *app) workflowCatalogCmd() *cobra.Command {
	var t envTarget
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Print the project's catalog lock (for compile --catalog)",
		Long: `Prints the project's current catalog lock (GET P/catalog): the published
versions, task queues and adapters a definition may reference. Compiling
against it locally gives what publishing the definition would compile.`,
		Example: `  bridge workflow catalog > catalog.lock.json
  bridge workflow compile flow.yaml --catalog catalog.lock.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			tg, err := t.open(ctx, a, false)
			if err != nil {
				return err
			}
			var lock json.RawMessage
			if err := tg.call(ctx, http.MethodGet, tg.ids.projectPath()+"/catalog", nil, nil, &lock); err != nil {
				return err
			}
			_, err = a.out.Write(append(lock, '\n'))
			return err
		},
	}
	t.add(cmd, false)
	return cmd
}

// definitionFile is a definition read for publication.
type definitionFile struct {
	path, source    string
	kind, id        string
	version         int
	collection, key string
}

// readDefinition reads a definition and its head (kind, id, version).
func readDefinition(path string) (definitionFile, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return definitionFile{}, fmt.Errorf("read definition: %w", err)
	}
	if len(src) > lang.MaxSourceBytes {
		return definitionFile{}, fmt.Errorf("%s is larger than %d bytes", path, lang.MaxSourceBytes)
	}
	d := definitionFile{path: path, source: string(src)}
	f, _ := lang.Parse(src, filepath.Base(path))
	var meta *lang.Meta
	if f != nil {
		d.kind = f.Kind
		switch {
		case f.Workflow != nil:
			meta = &f.Workflow.Meta
		case f.Action != nil:
			meta = &f.Action.Meta
		case f.Connector != nil:
			meta = &f.Connector.Meta
		case f.DecisionTable != nil:
			meta = &f.DecisionTable.Meta
		}
	}
	d.collection = kindCollections[d.kind]
	if d.collection == "" || meta == nil || meta.ID == "" {
		return d, fmt.Errorf("%s is not a workflow, action, connector or decision table with an id (check it with: bridge workflow validate %s)", path, path)
	}
	d.id, d.version = meta.ID, meta.Version
	sum := sha256.Sum256(src)
	d.key = "publish-" + hex.EncodeToString(sum[:])
	return d, nil
}

// published is what publish reports of a definition.
type published struct {
	File         string `json:"file"`
	Kind         string `json:"kind"`
	DefinitionID string `json:"definition_id"`
	Version      int    `json:"version"`
	ID           string `json:"id"`
	Digest       string `json:"digest"`
	// AlreadyPublished: the same source was published before.
	AlreadyPublished bool `json:"already_published"`
}

func (a *app) workflowPublishCmd() *cobra.Command {
	var t envTarget
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "publish <file.yaml>...",
		Short: "Publish definitions to the project, in the order given",
		Long: `Publishes workflows, actions, connectors and decision tables (POST
P/workflows, P/actions, ...): each is compiled against the project's catalog,
so give the files in dependency order (actions before the workflows that use
them). Every file is read and checked before the first is sent.

Published versions never change: the Idempotency-Key is derived from the
file's content, and a version already published with the same source is
reported as such, so running the command again is safe. A changed source
needs a new version number.`,
		Example: `  bridge workflow publish greet.yaml flow.yaml
  bridge workflow publish examples/fulfil-order/*.yaml
  bridge workflow publish flow.yaml --json | jq -r '.[0].id'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var defs []definitionFile
			for _, p := range args {
				d, err := readDefinition(p)
				if err != nil {
					return err
				}
				defs = append(defs, d)
			}
			ctx := cmd.Context()
			tg, err := t.open(ctx, a, false)
			if err != nil {
				return err
			}
			var done []published
			for i, d := range defs {
				p, err := publishDefinition(ctx, tg, d)
				if err != nil {
					if i > 0 {
						fmt.Fprintf(a.errw, "published %d of %d files before %s failed\n", i, len(defs), d.path)
					}
					return fmt.Errorf("%s: %w", d.path, err)
				}
				done = append(done, p)
				if !asJSON {
					verb := "published"
					if p.AlreadyPublished {
						verb = "already published"
					}
					fmt.Fprintf(a.out, "%s %s@%d (id %s)\n", verb, p.DefinitionID, p.Version, p.ID)
				}
			}
			if asJSON {
				return a.printJSON(done)
			}
			return nil
		},
	}
	t.add(cmd, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the published versions as a JSON array")
	return cmd
}

// publishDefinition publishes d; a version already published with the
// same source is answered as such.
func publishDefinition(ctx context.Context, tg *target, d definitionFile) (published, error) {
	base := tg.ids.projectPath() + "/" + d.collection
	v, already, err := tg.api().Publish(ctx, tg.e(), d.collection, d.key, client.PublishRequest{Source: d.source, Format: client.FormatYAML})
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		if v, err = existingVersion(ctx, tg, base, d); err != nil {
			return published{}, err
		}
		already = true
	}
	if err != nil {
		return published{}, err
	}
	return published{File: d.path, Kind: v.Kind, DefinitionID: v.DefinitionID, Version: v.Version, ID: v.ID,
		Digest: v.Digest, AlreadyPublished: already}, nil
}

// existingVersion reads the published version d.id@d.version; a different
// source is an error.
func existingVersion(ctx context.Context, tg *target, base string, d definitionFile) (client.Version, error) {
	versions, err := collectPages[client.VersionSummary](ctx, tg.s, base+"?limit=100&definition_id="+url.QueryEscape(d.id), false)
	if err != nil {
		return client.Version{}, err
	}
	for _, s := range versions {
		if s.Version != d.version {
			continue
		}
		var v client.Version
		if err := tg.call(ctx, http.MethodGet, base+"/"+url.PathEscape(s.ID), nil, nil, &v); err != nil {
			return v, err
		}
		if v.Source != d.source {
			return v, fmt.Errorf("%s@%d is already published (id %s) from another source; published versions never change: raise version: in the file",
				d.id, d.version, v.ID)
		}
		return v, nil
	}
	return client.Version{}, fmt.Errorf("%s@%d could not be published and is not listed (conflict)", d.id, d.version)
}

func (a *app) workflowActivateCmd() *cobra.Command {
	var t envTarget
	var defaults, name, key string
	var replace, asJSON bool
	cmd := &cobra.Command{
		Use:   "activate <workflow-id[@version]>",
		Short: "Activate a published workflow version in the environment",
		Long: `Activates a published workflow version (POST E/activations): the latest
version unless @version is given. Runs of the workflow id then start with
'bridge run start <workflow-id>'.

At most one activation of a workflow id is active. When the same version is
already active with the same input defaults, the command says so and changes
nothing; to activate another version or other defaults, pass --replace: the
active activation is retired in the same transaction (If-Match its revision).`,
		Example: `  bridge workflow activate acme/flow
  bridge workflow activate acme/flow@2 --replace
  bridge workflow activate acme/fulfil-order --input-defaults '{"currency":"EUR"}' --json | jq -r .id`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, version, err := parseWorkflowRef(args[0])
			if err != nil {
				return err
			}
			req := client.ActivationRequest{Name: name, InputDefaults: json.RawMessage("{}")}
			if defaults != "" {
				if req.InputDefaults, err = jsonObjectArg("input-defaults", defaults); err != nil {
					return err
				}
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			v, err := findWorkflowVersion(ctx, tg, id, version)
			if err != nil {
				return err
			}
			req.PublishedVersionID = v.ID
			hdr := map[string]string{client.HeaderIdempotencyKey: key}
			if key == "" {
				hdr[client.HeaderIdempotencyKey] = uuid.NewString()
			}
			current, err := findActive(ctx, tg, id, 0)
			if err != nil {
				return err
			}
			switch {
			case current == nil:
			case current.PublishedVersionID == v.ID && sameJSON(current.InputDefaults, req.InputDefaults) && (name == "" || deref(current.Name) == name):
				return a.printActivation(*current, asJSON, "already active: ")
			case !replace:
				return fmt.Errorf("%s is active; pass --replace to replace it with %s@%d", activationLabel(*current), v.DefinitionID, v.Version)
			default:
				hdr["If-Match"] = strconv.Quote(strconv.FormatInt(current.Revision, 10))
			}
			var x client.Activation
			if err := tg.call(ctx, http.MethodPost, tg.env("/activations"), hdr, req, &x); err != nil {
				return err
			}
			prefix := "activated "
			if current != nil {
				prefix = fmt.Sprintf("replaced activation %s (%s@%d): activated ", current.ID, current.WorkflowID, current.WorkflowVersion)
			}
			return a.printActivation(x, asJSON, prefix)
		},
	}
	t.add(cmd, false)
	cmd.Flags().StringVar(&defaults, "input-defaults", "", "input defaults: a JSON object, or @file.json; they fill absent top-level input properties of runs")
	cmd.Flags().StringVar(&name, "name", "", "display name of the activation")
	cmd.Flags().BoolVar(&replace, "replace", false, "replace the workflow's active activation")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key (default: a new one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the activation as JSON")
	return cmd
}

func (a *app) printActivation(x client.Activation, asJSON bool, prefix string) error {
	if asJSON {
		return a.printJSON(x)
	}
	fmt.Fprintf(a.out, "%s%s in environment %s\n", prefix, activationLabel(x), x.EnvironmentID)
	return nil
}

func sameJSON(x, y json.RawMessage) bool {
	var bx, by bytes.Buffer
	if json.Compact(&bx, x) != nil || json.Compact(&by, y) != nil {
		return false
	}
	return bytes.Equal(bx.Bytes(), by.Bytes())
}

// findWorkflowVersion finds the published version id@version of the
// project, the latest when version is 0.
func findWorkflowVersion(ctx context.Context, tg *target, id string, version int) (client.VersionSummary, error) {
	versions, err := collectPages[client.VersionSummary](ctx, tg.s, tg.ids.projectPath()+"/workflows?limit=100&definition_id="+url.QueryEscape(id), false)
	if err != nil {
		return client.VersionSummary{}, err
	}
	var best *client.VersionSummary
	for i, v := range versions {
		if (version == 0 || v.Version == version) && (best == nil || v.Version > best.Version) {
			best = &versions[i]
		}
	}
	if best == nil {
		ref := id
		if version != 0 {
			ref += "@" + strconv.Itoa(version)
		}
		return client.VersionSummary{}, fmt.Errorf("workflow %s is not published in project %s; publish it with: bridge workflow publish <file.yaml>", ref, tg.ids.project)
	}
	return *best, nil
}

func (a *app) workflowActivationsCmd() *cobra.Command {
	var t envTarget
	var status, workflow string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "activations",
		Short: "List the environment's activations",
		Long:  `Lists the activations of the environment (GET E/activations), active and retired, in id order.`,
		Example: `  bridge workflow activations
  bridge workflow activations --status active --workflow acme/flow --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"limit": {"100"}}
			switch status {
			case "":
			case client.ActivationActive, client.ActivationRetired:
				q.Set("status", status)
			default:
				return withCode(ExitUsage, errors.New("--status must be active or retired"))
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			acts, err := collectPages[client.Activation](ctx, tg.s, tg.env("/activations?"+q.Encode()), false)
			if err != nil {
				return err
			}
			shown := acts[:0]
			for _, x := range acts {
				if workflow == "" || x.WorkflowID == workflow {
					shown = append(shown, x)
				}
			}
			return printTable(a, shown, asJSON, "no activations", "ACTIVATION\tWORKFLOW\tSTATUS\tCREATED\tNAME", func(x client.Activation) []string {
				return []string{x.ID, x.WorkflowID + "@" + strconv.Itoa(x.WorkflowVersion), x.Status, x.CreatedAt.Local().Format(timeLayout), deref(x.Name)}
			})
		},
	}
	t.add(cmd, false)
	cmd.Flags().StringVar(&status, "status", "", "only active or retired activations")
	cmd.Flags().StringVar(&workflow, "workflow", "", "only activations of this workflow id")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the activations as a JSON array")
	return cmd
}
