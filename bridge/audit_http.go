package bridge

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

func (s *Service) handleAudit(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	q := parseQuery(r, "after", "limit", "through", "includePayloads")
	after := q.intRange("after", 0, 0, 1<<62)
	limit := q.intRange("limit", 100, 1, 200)
	through := q.intRange("through", -1, 0, 1<<62)
	payloads := q.boolean("includePayloads")
	if q.err != nil {
		return q.err
	}
	id, err := jobID(ps)
	if err != nil {
		return err
	}
	page, err := s.Audit(r.Context(), p, id, AuditQuery{After: after, Limit: int(limit), Through: through, Payloads: payloads})
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, page)
}

func (s *Service) handleTools(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	q := parseQuery(r, "after", "limit", "filesOnly")
	after := q.intRange("after", 0, 0, 1<<62)
	limit := q.intRange("limit", 100, 1, 200)
	filesOnly := q.boolean("filesOnly")
	if q.err != nil {
		return q.err
	}
	id, err := jobID(ps)
	if err != nil {
		return err
	}
	page, err := s.Tools(r.Context(), p, id, ToolQuery{After: after, Limit: int(limit), FilesOnly: filesOnly})
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, page)
}

func (s *Service) handleTool(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	n, err := parseUint(ps.ByName("tool"))
	if err != nil || n < 1 || n > 1<<31 {
		return errf(CodeInvalidParameter, "tool must be an integer >= 1")
	}
	id, err := jobID(ps)
	if err != nil {
		return err
	}
	t, err := s.Tool(r.Context(), p, id, n)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, t)
}
