package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource URIs of a job: its conversation and its audit log.
const (
	transcriptTemplate = "bridge://jobs/{jobId}/transcript"
	auditTemplate      = "bridge://jobs/{jobId}/audit"
)

var resourceURI = regexp.MustCompile(`^bridge://jobs/([0-9a-fA-F-]{36})/(transcript|audit)$`)

// maxAuditEntries bounds the audit resource: a host reads the start of a
// longer log through the HTTP API's pages (docs/bridge-api.md).
const maxAuditEntries = 2000

func registerResources(s *sdk.Server, api *API) {
	r := &resources{api: api}
	s.AddResourceTemplate(&sdk.ResourceTemplate{Name: "job-transcript", Title: "Job transcript", URITemplate: transcriptTemplate,
		MIMEType: "application/json", Description: "A job's conversation: every user and assistant message, in order."}, r.read)
	s.AddResourceTemplate(&sdk.ResourceTemplate{Name: "job-audit", Title: "Job audit log", URITemplate: auditTemplate,
		MIMEType: "application/json", Description: fmt.Sprintf("A job's append-only audit log (state changes, messages, tool observations), at most %d entries.", maxAuditEntries)}, r.read)
}

type resources struct{ api *API }

func (r *resources) read(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	m := resourceURI.FindStringSubmatch(uri)
	if m == nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	var body any
	var err error
	if m[2] == "transcript" {
		var msgs json.RawMessage
		_, err = r.api.call(ctx, http.MethodGet, jobPath(m[1], "/messages"), nil, nil, &msgs)
		body = msgs
	} else {
		body, err = r.audit(ctx, m[1])
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusNotFound {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		return nil, toolError(err)
	}
	data, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
}

// audit reads a job's audit pages, all fixed to the first page's through
// so the export is one consistent snapshot.
func (r *resources) audit(ctx context.Context, id string) (map[string]any, error) {
	var entries []json.RawMessage
	after, through := 0, -1
	truncated := false
	for {
		q := url.Values{"limit": {"200"}, "after": {strconv.Itoa(after)}}
		if through >= 0 {
			q.Set("through", strconv.Itoa(through))
		}
		var page struct {
			Through   int               `json:"through"`
			Entries   []json.RawMessage `json:"entries"`
			NextAfter *int              `json:"nextAfter"`
			HasMore   bool              `json:"hasMore"`
		}
		if _, err := r.api.call(ctx, http.MethodGet, jobPath(id, "/audit?"+q.Encode()), nil, nil, &page); err != nil {
			return nil, err
		}
		through = page.Through
		entries = append(entries, page.Entries...)
		if !page.HasMore || page.NextAfter == nil {
			break
		}
		if len(entries) >= maxAuditEntries {
			truncated = true
			break
		}
		after = *page.NextAfter
	}
	if entries == nil {
		entries = []json.RawMessage{}
	}
	return map[string]any{"jobId": id, "through": through, "entries": entries, "truncated": truncated}, nil
}
