// Package steptest runs drafts for real in an environment (docs/platform-api.md, "Debug
// sessions and step tests"; docs/platform-api.md, "Step tests and test
// activations"): the environment's test policy, step tests (one step of a
// draft revision run as a test run) and draft test activations (a draft
// revision activated for a limited time, with test runs started directly
// or by signed requests to a listen route).
//
// Unlike debug sessions these call real connections, so the side-effect
// rules come first: the test policy must allow the call, and a step whose
// action has side effects runs only when the request acknowledges its
// exact side-effect class.
//
// Tested drafts run through the engine like any run: the draft revision is
// compiled against the project's catalog and stored as a hidden test
// version with a test activation (catalog.TestMarker,
// activation.InsertTest), so runs, human tasks, http calls, timers and
// run reads are the engine's own. Files: policy*.go (the test policy),
// steptest*.go (step tests), activation*.go (draft test activations and
// listen routes), derive.go (the one-step artifact), expiry.go (the
// scheduler phase that ends expired step tests and test activations).
package steptest
