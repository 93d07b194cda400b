// Package file serves the platform's files (docs/platform-api.md: E/files,
// E/files/{id}/chunks|finish|download, the human task routes
// E/human-tasks/{id}/files/* and the worker routes E/tasks/files/*,
// capabilities file.manage and file.read, migration 0028_files).
//
// A file is uploaded in chunks of a size chosen at creation, in index
// order; a chunk sent again with the same bytes is a no-op, with other
// bytes a 409. finish re-reads the stored bytes, checks the declared size
// and SHA-256 and moves them into place as a content-addressed blob
// (files/blobs/<2 hex>/<sha256> in the data directory); only then is the
// file visible. An upload left unfinished expires and its bytes are
// reclaimed by the sweeper (Service.Sweep, a phase of the engine's loop).
//
// Crash safety (see docs/platform-api.md, "Files"): bytes are written and
// synced before the row that counts them; a blob is renamed into place and
// its directory synced before the row that shows it; rows are removed
// before their bytes. Service.Recover, at start, removes what a crash can
// leave behind: temporary files, parts without an upload, blobs no row
// names. So neither a visible half file nor a never reclaimed orphan can
// exist.
//
// Files: file.go (types, limits, rules), blob.go (the bytes on disk),
// file_store.go (SQL), service.go (operations), sweep.go (expiry and
// reclamation), file_http.go (E/files routes), task_http.go (human task
// and worker routes), refs.go (file references in run values).
package file
