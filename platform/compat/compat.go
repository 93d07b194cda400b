package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/lang"
	"github.com/agentbridge/bridge/store"
)

// Verdicts.
const (
	Compatible = "compatible"
	Restricted = "restricted"
)

// Reasons of a restricted verdict.
const (
	// ReasonIncompatible: a published definition cannot run here.
	ReasonIncompatible = "incompatible_definitions"
	// ReasonAuthorityMissing: the scan could not read what it checks.
	ReasonAuthorityMissing = "authority_missing"
)

// Finding codes.
const (
	FindingFormat  = "artifact_format"
	FindingAdapter = "adapter_missing"
	FindingProgram = "program_invalid"
)

// Report is the answer of GET P/operations/compatibility and its check.
type Report struct {
	ProjectID    string    `json:"project_id" format:"uuid"`
	Verdict      string    `json:"verdict" enum:"compatible,restricted"`
	Reason       *string   `json:"reason" doc:"incompatible_definitions or authority_missing while restricted"`
	Server       Server    `json:"server"`
	Checked      int       `json:"checked" doc:"published definitions checked"`
	Incompatible []Finding `json:"incompatible"`
	CheckedAt    time.Time `json:"checked_at"`
	NextScanAt   time.Time `json:"next_scan_at" doc:"the next automatic rescan"`
}

// Server is what this server runs.
type Server struct {
	ArtifactFormats     []string `json:"artifact_formats"`
	ExpressionLanguage  string   `json:"expression_language"`
	ExpressionCostLimit int64    `json:"expression_cost_limit"`
	Adapters            []string `json:"adapters"`
}

// Finding is one published definition this server cannot run.
type Finding struct {
	PublishedVersionID string `json:"published_version_id" format:"uuid"`
	Kind               string `json:"kind"`
	DefinitionID       string `json:"definition_id"`
	Version            int    `json:"version"`
	Code               string `json:"code" enum:"artifact_format,adapter_missing,program_invalid"`
	Message            string `json:"message"`
}

// server describes this server.
func server() Server {
	return Server{ArtifactFormats: []string{lang.WorkflowFormat, lang.ActionFormat, lang.ConnectorFormat, lang.DecisionTableFormat},
		ExpressionLanguage: "cel", ExpressionCostLimit: lang.ExprCostLimit, Adapters: catalog.InstalledAdapters()}
}

// formats maps each definition kind to the artifact format this server
// reads.
var formats = map[string]string{lang.KindWorkflow: lang.WorkflowFormat, lang.KindAction: lang.ActionFormat,
	lang.KindConnector: lang.ConnectorFormat, lang.KindDecisionTable: lang.DecisionTableFormat}

// artifactHead is what the scan reads of any artifact.
type artifactHead struct {
	Format  string `json:"format"`
	Adapter string `json:"adapter"`
	Binding *struct {
		Type    string `json:"type"`
		Adapter string `json:"adapter"`
	} `json:"binding"`
}

// Loader answers why the engine cannot run a published workflow version
// (engine.Service.CanRun).
type Loader func(ctx context.Context, project, versionID string) error

// scan checks every published definition of project.
func scan(ctx context.Context, q store.Querier, load Loader, project string) (Report, error) {
	r := Report{ProjectID: project, Verdict: Compatible, Server: server(), Incompatible: []Finding{}}
	versions, err := catalog.ProjectVersions(ctx, q, project)
	if err != nil {
		return r, err
	}
	adapters := r.Server.Adapters
	for _, v := range versions {
		r.Checked++
		f := Finding{PublishedVersionID: v.ID, Kind: v.Kind, DefinitionID: v.DefinitionID, Version: v.Version}
		var h artifactHead
		if err := json.Unmarshal(v.Artifact, &h); err != nil || h.Format != formats[v.Kind] {
			f.Code, f.Message = FindingFormat, fmt.Sprintf("artifact format %q is not %s", h.Format, formats[v.Kind])
			r.Incompatible = append(r.Incompatible, f)
			continue
		}
		adapter := h.Adapter
		if h.Binding != nil && h.Binding.Type == "adapter" {
			adapter = h.Binding.Adapter
		}
		if adapter != "" && !slices.Contains(adapters, adapter) {
			f.Code, f.Message = FindingAdapter, fmt.Sprintf("adapter %q is not installed on this server", adapter)
			r.Incompatible = append(r.Incompatible, f)
			continue
		}
		if v.Kind == lang.KindWorkflow {
			if err := load(ctx, project, v.ID); err != nil {
				if ctx.Err() != nil {
					return r, ctx.Err()
				}
				f.Code, f.Message = FindingProgram, "the engine cannot load it: "+err.Error()
				r.Incompatible = append(r.Incompatible, f)
			}
		}
	}
	if len(r.Incompatible) > 0 {
		reason := ReasonIncompatible
		r.Verdict, r.Reason = Restricted, &reason
	}
	return r, nil
}
