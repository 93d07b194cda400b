// Package trigger starts runs without a person asking each time (docs/platform-api.md,
// "Runs, incidents, schedules", the Schedule state table, the calendar
// grammar and firing rules of "Generic rules"): schedules, which start a
// run of an activation at each occurrence of a five-field UTC calendar,
// fired by the engine's scheduler loop through the "due schedules" phase
// (Service.DueSchedules, added with engine.Service.AddPhase); and signed
// webhook triggers, which start a run for each delivery to
// POST /webhooks/{id} signed by the Standard Webhooks scheme.
//
// Files follow the platform's layout: schedule.go (types, states and
// rules), schedule_store.go (SQL), schedule_http.go (routes), scan.go (the
// due-schedules phase), calendar.go (the grammar), and webhook.go,
// webhook_store.go, webhook_http.go for triggers. The clock is injected
// (Options.Now), so tests run minutes of schedule time in milliseconds.
package trigger
