// Package source serves provider sources (docs/platform-api.md, "Provider sources and
// receipts", the Provider receipt state table; docs/platform-api.md,
// "Connections", "Provider packages" and "Provider sources"): connections
// (immutable revisions of a provider account's settings and sealed
// secrets), provider sources (a connection revision bound to a run start
// or a signal through a versioned provider package), the ingress route
// POST|GET /provider-ingress/{identifier} that authenticates, normalizes
// and admits provider events as receipts, and the dispatcher, a phase of
// the engine's scheduler loop (Service.DueReceipts) that starts or
// signals runs from pending receipts.
//
// Files: connection.go, connection_store.go, connection_http.go;
// source.go, source_store.go, source_http.go, contain.go (the static
// schema containment check); ingress.go, ingress_http.go; receipt.go,
// receipt_store.go, receipt_http.go, dispatch.go. Provider packages live
// in platform/source/provider.
package source
