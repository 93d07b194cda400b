package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// Doer sends one JSON request and decodes the answer into out. *Client is
// one; so is a caller's wrapper that renews its token on the way (the
// CLI's platform session).
type Doer interface {
	Do(ctx context.Context, method, path string, hdr map[string]string, body, out any) (http.Header, error)
}

// Env names an environment of the platform API by the ids in its paths
// (docs/platform-api.md: P = /api/v1/tenants/{t}/projects/{p}, E = P/environments/{e}).
type Env struct{ Tenant, Project, Environment string }

// TenantPath is /api/v1/tenants/{t}.
func (e Env) TenantPath() string { return "/api/v1/tenants/" + url.PathEscape(e.Tenant) }

// ProjectPath is P.
func (e Env) ProjectPath() string { return e.TenantPath() + "/projects/" + url.PathEscape(e.Project) }

// Path is E followed by rest ("/runs/...").
func (e Env) Path(rest string) string {
	return e.ProjectPath() + "/environments/" + url.PathEscape(e.Environment) + rest
}

// Platform is the typed platform API over a Doer.
type Platform struct{ D Doer }

// keyed is the Idempotency-Key header of key (none when empty).
func keyed(key string) map[string]string {
	if key == "" {
		return nil
	}
	return map[string]string{HeaderIdempotencyKey: key}
}

// call sends a request and answers its decoded T.
func call[T any](ctx context.Context, d Doer, method, path string, hdr map[string]string, body any) (T, error) {
	var v T
	_, err := d.Do(ctx, method, path, hdr, body, &v)
	return v, err
}

// Collect follows next_cursor from path until the last page and answers
// every item.
func Collect[T any](ctx context.Context, d Doer, path string) ([]T, error) {
	var all []T
	cursor := ""
	for {
		p := path
		if cursor != "" {
			sep := "?"
			if strings.Contains(p, "?") {
				sep = "&"
			}
			p += sep + "cursor=" + url.QueryEscape(cursor)
		}
		page, err := call[Page[T]](ctx, d, http.MethodGet, p, nil, nil)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return all, nil
		}
		cursor = *page.NextCursor
	}
}

// Identity is GET /api/v1/identity: who the token is and what it reaches.
func (p Platform) Identity(ctx context.Context) (Identity, error) {
	return call[Identity](ctx, p.D, http.MethodGet, "/api/v1/identity", nil, nil)
}

// Publish publishes a definition of kind (workflows, actions, connectors,
// decision-tables) in the project; replayed is true when the key's earlier
// answer was replayed.
func (p Platform) Publish(ctx context.Context, e Env, kind, key string, req PublishRequest) (v Version, replayed bool, err error) {
	h, err := p.D.Do(ctx, http.MethodPost, e.ProjectPath()+"/"+kind, keyed(key), req, &v)
	return v, err == nil && h.Get(HeaderReplayed) == "true", err
}

// Activate creates an activation of a published workflow version.
func (p Platform) Activate(ctx context.Context, e Env, key string, req ActivationRequest) (Activation, error) {
	return call[Activation](ctx, p.D, http.MethodPost, e.Path("/activations"), keyed(key), req)
}

// Activation reads an activation.
func (p Platform) Activation(ctx context.Context, e Env, id string) (Activation, error) {
	return call[Activation](ctx, p.D, http.MethodGet, e.Path("/activations/"+url.PathEscape(id)), nil, nil)
}

// StartRun starts a run of an active activation.
func (p Platform) StartRun(ctx context.Context, e Env, key string, req StartRequest) (Run, error) {
	return call[Run](ctx, p.D, http.MethodPost, e.Path("/runs"), keyed(key), req)
}

// Run reads a run.
func (p Platform) Run(ctx context.Context, e Env, id string) (Run, error) {
	return call[Run](ctx, p.D, http.MethodGet, e.Path("/runs/"+url.PathEscape(id)), nil, nil)
}

// RunAction posts body to E/runs/{run}/{action} (cancel, pause, resume,
// retry) and answers the run it names.
func (p Platform) RunAction(ctx context.Context, e Env, id, action, key string, body any) (Run, error) {
	return call[Run](ctx, p.D, http.MethodPost, e.Path("/runs/"+url.PathEscape(id)+"/"+action), keyed(key), body)
}

// ArchiveAction posts E/runs/{run}/archive or /restore (action) and
// answers what was packed or put back.
func (p Platform) ArchiveAction(ctx context.Context, e Env, id, action, key string, req ArchiveRequest) (RunArchive, error) {
	return call[RunArchive](ctx, p.D, http.MethodPost, e.Path("/runs/"+url.PathEscape(id)+"/"+action), keyed(key), req)
}

// PurgeRun posts E/runs/{run}/purge: an archived run and everything
// recorded for it are deleted.
func (p Platform) PurgeRun(ctx context.Context, e Env, id, key string, req ArchiveRequest) (RunPurged, error) {
	return call[RunPurged](ctx, p.D, http.MethodPost, e.Path("/runs/"+url.PathEscape(id)+"/purge"), keyed(key), req)
}

// Signal sends a signal to a run.
func (p Platform) Signal(ctx context.Context, e Env, id, key string, req SignalRequest) (SignalAccepted, error) {
	return call[SignalAccepted](ctx, p.D, http.MethodPost, e.Path("/runs/"+url.PathEscape(id)+"/signals"), keyed(key), req)
}

// Runs reads one page of the run list (q: limit, cursor, status, ...).
func (p Platform) Runs(ctx context.Context, e Env, q url.Values) (Page[RunSummary], error) {
	return call[Page[RunSummary]](ctx, p.D, http.MethodGet, e.Path("/runs?"+q.Encode()), nil, nil)
}

// Logs reads one page of a run's log (q: after, limit, ...).
func (p Platform) Logs(ctx context.Context, e Env, id string, q url.Values) (Page[LogEntry], error) {
	return call[Page[LogEntry]](ctx, p.D, http.MethodGet, e.Path("/runs/"+url.PathEscape(id)+"/logs?"+q.Encode()), nil, nil)
}

// HumanTask reads a human task.
func (p Platform) HumanTask(ctx context.Context, e Env, id string) (HumanTask, error) {
	return call[HumanTask](ctx, p.D, http.MethodGet, e.Path("/human-tasks/"+url.PathEscape(id)), nil, nil)
}

// HumanTaskAction posts body to E/human-tasks/{id}/{verb} (claim, release,
// reassign, complete) and answers the task.
func (p Platform) HumanTaskAction(ctx context.Context, e Env, id, verb string, hdr map[string]string, body any) (HumanTask, error) {
	return call[HumanTask](ctx, p.D, http.MethodPost, e.Path("/human-tasks/"+url.PathEscape(id)+"/"+verb), hdr, body)
}

// ResolveIncident resolves an incident (hdr carries If-Match).
func (p Platform) ResolveIncident(ctx context.Context, e Env, id string, hdr map[string]string, req ResolveRequest) (Resolved, error) {
	return call[Resolved](ctx, p.D, http.MethodPost, e.Path("/incidents/"+url.PathEscape(id)+"/resolve"), hdr, req)
}

// File reads a file.
func (p Platform) File(ctx context.Context, e Env, id string) (File, error) {
	return call[File](ctx, p.D, http.MethodGet, e.Path("/files/"+url.PathEscape(id)), nil, nil)
}

// DeleteFile deletes a file, or abandons an upload.
func (p Platform) DeleteFile(ctx context.Context, e Env, id string) (FileDeletion, error) {
	return call[FileDeletion](ctx, p.D, http.MethodDelete, e.Path("/files/"+url.PathEscape(id)), nil, nil)
}

// Trigger reads a trigger; DisableTrigger disables it for good.
func (p Platform) Trigger(ctx context.Context, e Env, id string) (Trigger, error) {
	return call[Trigger](ctx, p.D, http.MethodGet, e.Path("/triggers/"+url.PathEscape(id)), nil, nil)
}

// DisableTrigger disables a trigger for good (its URL answers 404).
func (p Platform) DisableTrigger(ctx context.Context, e Env, id string) (Trigger, error) {
	return call[Trigger](ctx, p.D, http.MethodPost, e.Path("/triggers/"+url.PathEscape(id)+"/disable"), map[string]string{"If-Match": "1"}, nil)
}
