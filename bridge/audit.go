package bridge

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
)

// maxAuditPage is where a page with payloads stops growing ("about 4 MB").
// A page always holds at least one whole entry, however large.
const maxAuditPage = 4 << 20

// AuditQuery pages GET /v1/bridge/jobs/{id}/audit.
type AuditQuery struct {
	After int64
	Limit int
	// Through fixes how far an export reaches; -1 takes the log's end now.
	Through  int64
	Payloads bool
}

// AuditPage is a page of a job's audit log (JSON name order).
type AuditPage struct {
	Entries   []AuditEntry `json:"entries"`
	HasMore   bool         `json:"hasMore"`
	JobID     string       `json:"jobId"`
	NextAfter *int         `json:"nextAfter"`
	Through   int64        `json:"through"`
}

// Audit pages the audit log of a job p may see (docs/bridge-api.md, "Reads").
func (s *Service) Audit(ctx context.Context, p Principal, id string, q AuditQuery) (AuditPage, error) {
	job, err := s.Job(ctx, p, id)
	if err != nil {
		return AuditPage{}, err
	}
	through := q.Through
	if through < 0 {
		// The first page fixes how far this export reaches; the log is
		// append-only, so pages that keep the same through never change.
		if through, err = s.auditHead(ctx, job.ID); err != nil {
			return AuditPage{}, err
		}
	}
	entries, more, err := s.auditEntries(ctx, job.ID, q.After, through, q.Limit, q.Payloads, maxAuditPage)
	if err != nil {
		return AuditPage{}, err
	}
	page := AuditPage{JobID: job.ID, Through: through, Entries: entries, HasMore: more}
	if more {
		page.NextAfter = &entries[len(entries)-1].Seq
	}
	return page, nil
}

// ToolQuery pages GET /v1/bridge/jobs/{id}/tools.
type ToolQuery struct {
	After     int64
	Limit     int
	FilesOnly bool
}

// ToolPage is a page of a job's tool observations (JSON name order).
type ToolPage struct {
	HasMore   bool   `json:"hasMore"`
	JobID     string `json:"jobId"`
	NextAfter *int   `json:"nextAfter"`
	Tools     []Tool `json:"tools"`
}

// Tools pages the tool observations of a job p may see.
func (s *Service) Tools(ctx context.Context, p Principal, id string, q ToolQuery) (ToolPage, error) {
	job, err := s.Job(ctx, p, id)
	if err != nil {
		return ToolPage{}, err
	}
	tools, err := s.toolsAfter(ctx, job.ID, q.After, q.Limit+1, q.FilesOnly)
	if err != nil {
		return ToolPage{}, err
	}
	page := ToolPage{JobID: job.ID, Tools: tools}
	if page.HasMore = len(tools) > q.Limit; page.HasMore {
		page.Tools = tools[:q.Limit]
		page.NextAfter = &page.Tools[len(page.Tools)-1].Seq
	}
	return page, nil
}

// Tool reads observation seq (>= 1) of a job p may see.
func (s *Service) Tool(ctx context.Context, p Principal, id string, seq uint64) (Tool, error) {
	job, err := s.Job(ctx, p, id)
	if err != nil {
		return Tool{}, err
	}
	t, err := s.toolBySeq(ctx, job.ID, seq)
	if errors.Is(err, sql.ErrNoRows) {
		return Tool{}, errf(CodeNotFound, "job %s has no tool observation %s", job.ID, strconv.FormatUint(seq, 10))
	}
	return t, err
}
