// Package catalog serves a project's definitions (docs/platform-api.md, "Catalog and
// compiler", "Definitions"): published versions of workflows, actions,
// connectors and decision tables, drafts with every lifecycle revision, the
// project's catalog lock, installed connector descriptors, and the compiler
// and decision evaluation routes, all through the platform/api toolkit.
//
// Published versions are immutable (the 0004_definitions triggers refuse
// updates and deletes): publishing compiles the source with platform/lang
// against the project's catalog lock read in the same transaction, and a
// change needs a new version number, which gets a new id. The catalog lock
// is derived from the published artifacts (entryOf), so a workflow that
// references a published action compiles as soon as the action is
// published.
//
// Compile and validate answer lang's Result.Encode bytes, the output of
// `bridge workflow compile --json`. POST /studio/local/decision/evaluate is
// the editor host's offline evaluation: the daemon owner token or a
// platform token holding compile in some project. The routes are listed in
// docs/platform-api.md.
package catalog
