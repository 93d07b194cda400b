package catalog

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/lang"
)

// Route tags of the OpenAPI document.
const (
	tagCatalog     = "Catalog and compiler"
	tagDefinitions = "Definitions"
	tagStudio      = "Editor host"
)

// projectBase is P relative to api.Prefix.
const projectBase = "/tenants/{tenant}/projects/{project}"

// StudioDecisionPath is the editor host's decision evaluation route.
const StudioDecisionPath = "/studio/local/decision/evaluate"

// Register adds the catalog, compiler and definition routes to a.
func (s *Service) Register(a *api.API, r *httprouter.Router) {
	routes := []api.Route{
		{Method: http.MethodGet, Path: projectBase + "/catalog", Capability: auth.CapCatalogRead, Handler: s.getCatalog,
			OperationID: "getCatalog", Tag: tagCatalog, Summary: "The project's catalog lock",
			Description: "Canonical catalog lock of the project's published versions, task queues and installed adapters; pass it as a compiler request's catalog or to `bridge workflow compile --catalog`.",
			Response:    lang.CatalogLock{}},
		{Method: http.MethodGet, Path: projectBase + "/capabilities", Capability: auth.CapCatalogRead, Handler: s.getCapabilities,
			OperationID: "getCapabilities", Tag: tagCatalog, Summary: "Compiler, catalog and caller capabilities",
			Response: Capabilities{}},
		{Method: http.MethodPost, Path: projectBase + "/compiler/compile", Capability: auth.CapCompile, MaxBody: maxBody, Handler: s.compile,
			OperationID: "compileDefinition", Tag: tagCatalog, Summary: "Compile a source (saves nothing)",
			Description: "Without catalog, compiles against the project's current catalog lock. The body is byte for byte lang.Result.Encode, what `bridge workflow compile --json` prints for the same source, filename and lock. 200 can carry ok: false.",
			Request:     CompileRequest{}, Response: lang.Result{}},
		{Method: http.MethodPost, Path: projectBase + "/compiler/validate", Capability: auth.CapCompile, MaxBody: maxBody, Handler: s.validate,
			OperationID: "validateDefinition", Tag: tagCatalog, Summary: "Validate a source",
			Description: "Without catalog, partial validation (references unresolved, strict has no effect); with one, identical to compile plus validationOk.",
			Request:     CompileRequest{}, Response: lang.ValidationResult{}},
		{Method: http.MethodPost, Path: projectBase + "/compiler/evaluate-decision", Capability: auth.CapCompile, Handler: s.evaluateDecision,
			OperationID: "evaluateDecision", Tag: tagCatalog, Summary: "Evaluate a decision table",
			Description: "Body: exactly one of table (inline) and reference (a published decision table, id@version), and input.",
			Request:     DecisionEvaluationRequest{}, Response: DecisionEvaluation{}},
		{Method: http.MethodGet, Path: projectBase + "/drafts", Capability: auth.CapCatalogRead, Page: true, Handler: s.listDraftsRoute,
			OperationID: "listDrafts", Tag: tagDefinitions, Summary: "List drafts",
			Query:    []api.Param{{Name: "include_retired", Type: "boolean", Description: "also list retired drafts (default false)"}},
			Response: api.Page[DraftSummary]{}},
		{Method: http.MethodGet, Path: projectBase + "/drafts/{identifier}", Capability: auth.CapCatalogRead, Handler: s.getDraftRoute,
			OperationID: "getDraft", Tag: tagDefinitions, Summary: "Read a draft with every revision",
			Query:    []api.Param{{Name: "revision", Type: "integer", Description: "show the source saved at this revision"}},
			Response: Draft{}, ETag: true},
		{Method: http.MethodPut, Path: projectBase + "/drafts/{identifier}", Capability: auth.CapDefinitionWrite, IfMatch: api.PolicyOptional,
			Idempotency: api.PolicyOptional, MaxBody: maxBody, Handler: s.saveDraftRoute,
			OperationID: "saveDraft", Tag: tagDefinitions, Summary: "Create or save a draft",
			Description: "A new id (a UUID chosen by the client) is created without If-Match (201); an existing draft needs If-Match with its current revision (200; 412 PF-ETAG when stale). A retired draft id is never reused (409).",
			Request:     PublishRequest{}, Response: Draft{}, ETag: true},
		// Retiring a definition needs an Idempotency-Key (docs/platform-api.md, "Generic
		// rules"); a retry with the same key answers the committed result.
		{Method: http.MethodDelete, Path: projectBase + "/drafts/{identifier}", Capability: auth.CapDefinitionWrite, IfMatch: api.PolicyRequired,
			Idempotency: api.PolicyRequired, Handler: s.retireDraftRoute,
			OperationID: "retireDraft", Tag: tagDefinitions, Summary: "Retire a draft",
			Description: "Needs Idempotency-Key and If-Match with the latest revision; adds a retirement revision. Retiring again answers 409; the same key answers the committed retirement again.",
			Response:    Draft{}, ETag: true},
		{Method: http.MethodGet, Path: projectBase + "/connector-descriptors", Capability: auth.CapCatalogRead, Handler: s.listDescriptors,
			OperationID: "listConnectorDescriptors", Tag: tagCatalog, Summary: "Installed connectors",
			Response: []ConnectorDescriptor{}},
		{Method: http.MethodGet, Path: projectBase + "/connector-descriptors/{adapter}", Capability: auth.CapCatalogRead, Handler: s.getDescriptor,
			OperationID: "getConnectorDescriptor", Tag: tagCatalog, Summary: "One installed connector",
			Response: ConnectorDescriptor{}},
		{Method: http.MethodPost, Path: StudioDecisionPath, Layout: api.Root, Access: api.AccessOwnerOrToken, Handler: s.studioEvaluate,
			OperationID: "studioEvaluateDecision", Tag: tagStudio, Summary: "Evaluate a decision table (editor host, offline)",
			Description: "Needs the daemon owner token, or a platform token whose principal holds compile in some project. Body camelCase {table, input}; answer snake_case.",
			Request:     StudioDecisionRequest{}, Response: DecisionEvaluation{}},
	}
	for _, col := range collections {
		base := projectBase + "/" + col.Segment
		routes = append(routes,
			api.Route{Method: http.MethodGet, Path: base, Capability: auth.CapCatalogRead, Page: true, Handler: s.listVersionsRoute(col),
				OperationID: "list" + col.Op + "Versions", Tag: tagDefinitions, Summary: "List published " + col.Name + " versions",
				Query:    []api.Param{{Name: "definition_id", Description: "only versions of this definition id"}},
				Response: api.Page[VersionSummary]{}},
			api.Route{Method: http.MethodPost, Path: base, Capability: auth.CapDefinitionPublish, Idempotency: api.PolicyRequired,
				MaxBody: maxBody, Handler: s.publish(col),
				OperationID: "publish" + col.Op, Tag: tagDefinitions, Summary: "Publish a " + col.Name + " version",
				Description: "Compiles the source (kind " + col.Kind + ") against the project's current catalog lock and stores an immutable version with a new id. 422 PF-VALIDATION with the compile result when it does not compile; 409 when that version is already published.",
				Request:     PublishRequest{}, Response: Version{}, Status: http.StatusCreated, ETag: true},
			api.Route{Method: http.MethodGet, Path: base + "/{identifier}", Capability: auth.CapCatalogRead, Handler: s.getVersionRoute(col),
				OperationID: "get" + col.Op + "Version", Tag: tagDefinitions, Summary: "Read a published " + col.Name + " version",
				Response: Version{}, ETag: true},
		)
	}
	for _, rt := range routes {
		a.Handle(r, rt)
	}
}
