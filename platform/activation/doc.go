// Package activation serves the activations of an environment (docs/platform-api.md,
// "Environment level"): an activation binds a published workflow version
// of the environment's project to the environment, with input defaults and
// connection bindings; runs of the environment start from it.
//
// Routes, under E = /api/v1/tenants/{tenant}/projects/{project}/environments/{environment}:
//
//	GET  E/activations                      catalog.read      page in id order, filter status
//	POST E/activations                      release.activate  Idempotency-Key, optional If-Match; 201
//	GET  E/activations/{identifier}         catalog.read      ETag = revision
//	GET  E/activations/{identifier}/export  catalog.read      activation with its workflow artifact
//	POST E/activations/{identifier}/retire  release.retire    If-Match and Idempotency-Key; 200
//
// At most one activation of a workflow id is active per environment. POST
// without If-Match while one is active answers 409 PF-CONFLICT; with
// If-Match equal to the active one's revision the new activation replaces
// it (the previous one is retired in the same transaction), a stale
// revision answers 412 PF-ETAG. An activation's binding never changes;
// retiring is final (revision 2) and retiring again answers 409
// PF-CONFLICT.
package activation
