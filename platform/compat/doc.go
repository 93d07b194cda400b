// Package compat decides whether this server can run each project's
// published definitions (docs/platform-api.md, "Project level": P/operations/
// compatibility and its check; docs/platform-api.md, "Compatibility"):
// every published workflow must load in the engine (artifact format,
// expression language and cost limit, references pinned in the catalog),
// every action, connector and decision table must have a format this
// server reads and an adapter it runs.
//
// A project whose scan finds a definition it cannot run, or whose scan
// could not be made (authority missing), is restricted: readiness
// answers 503, and every new run start in it (the engine asks Admit) is
// refused with 503 PF-COMPATIBILITY and Retry-After, the whole seconds to
// the next automatic rescan. Rescans run in the engine's loop (Rescan);
// an explicit check rescans at once and lifts the verdict when the scan
// passes. Files: compat.go (the scan and the report), compat_store.go
// (SQL), compat_http.go (routes), service.go (admission, readiness,
// rescans).
package compat
