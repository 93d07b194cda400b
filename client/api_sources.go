package client

import (
	"context"
	"net/http"
	"net/url"
)

// Schedules, connections, provider sources and their receipts
// (docs/platform-api.md).

// SaveSchedule creates a schedule, or replaces one (req.ID, hdr If-Match),
// and answers its next occurrences.
func (p Platform) SaveSchedule(ctx context.Context, e Env, hdr map[string]string, req ScheduleRequest) (Upcoming, error) {
	return call[Upcoming](ctx, p.D, http.MethodPost, e.Path("/schedules"), hdr, req)
}

// Schedule reads a schedule.
func (p Platform) Schedule(ctx context.Context, e Env, id string) (Schedule, error) {
	return call[Schedule](ctx, p.D, http.MethodGet, e.Path("/schedules/"+url.PathEscape(id)), nil, nil)
}

// ScheduleAction posts E/schedules/{id}/{action} (pause, resume, delete)
// with hdr (If-Match).
func (p Platform) ScheduleAction(ctx context.Context, e Env, id, action string, hdr map[string]string) (Schedule, error) {
	return call[Schedule](ctx, p.D, http.MethodPost, e.Path("/schedules/"+url.PathEscape(id)+"/"+action), hdr, nil)
}

// Connection reads a connection (its newest revision; never its secrets).
func (p Platform) Connection(ctx context.Context, e Env, id string) (Connection, error) {
	return call[Connection](ctx, p.D, http.MethodGet, e.Path("/connections/"+url.PathEscape(id)), nil, nil)
}

// CreateSource creates a provider source.
func (p Platform) CreateSource(ctx context.Context, e Env, req SourceRequest) (Source, error) {
	return call[Source](ctx, p.D, http.MethodPost, e.Path("/provider-sources"), nil, req)
}

// Source reads a provider source.
func (p Platform) Source(ctx context.Context, e Env, id string) (Source, error) {
	return call[Source](ctx, p.D, http.MethodGet, e.Path("/provider-sources/"+url.PathEscape(id)), nil, nil)
}

// DisableSource disables a provider source for good.
func (p Platform) DisableSource(ctx context.Context, e Env, id string) (Source, error) {
	return call[Source](ctx, p.D, http.MethodPost, e.Path("/provider-sources/"+url.PathEscape(id)+"/disable"), nil, nil)
}

// Receipt reads a provider receipt (never its payload).
func (p Platform) Receipt(ctx context.Context, e Env, id string) (Receipt, error) {
	return call[Receipt](ctx, p.D, http.MethodGet, e.Path("/provider-receipts/"+url.PathEscape(id)), nil, nil)
}

// RetryReceipt makes a blocked or failed receipt pending again.
func (p Platform) RetryReceipt(ctx context.Context, e Env, id string) (Receipt, error) {
	return call[Receipt](ctx, p.D, http.MethodPost, e.Path("/provider-receipts/"+url.PathEscape(id)+"/retry"), nil, nil)
}
