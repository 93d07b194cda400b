package bridge

import (
	"context"
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// The job routes of docs/bridge-api.md ("Jobs"): each decodes the request,
// calls one Service method and encodes its answer.

func (s *Service) handleCreateJob(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	var req JobRequest
	key, err := decodeChange(r, &req)
	if err != nil {
		return err
	}
	job, replayed, err := s.CreateJob(r.Context(), p, req, key)
	if err != nil {
		return err
	}
	if replayed != nil {
		return replayStored(w, replayed)
	}
	w.Header().Set("Location", "/v1/bridge/jobs/"+job.ID)
	return respond(w, http.StatusAccepted, job)
}

func (s *Service) handleListJobs(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	q := parseQuery(r, "limit", "after", "order")
	limit := q.intRange("limit", 100, 1, 200)
	order := q.oneOf("order", "asc", "asc", "desc")
	if q.err != nil {
		return q.err
	}
	page, err := s.ListJobs(r.Context(), p, JobQuery{Limit: int(limit), After: q.v.Get("after"), Desc: order == "desc"})
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, page)
}

// jobView serves a read of one job that takes no query parameters.
func jobView[T any](read func(ctx context.Context, p Principal, id string) (T, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
		if err := noQuery(r); err != nil {
			return err
		}
		id, err := jobID(ps)
		if err != nil {
			return err
		}
		v, err := read(r.Context(), p, id)
		if err != nil {
			return err
		}
		return respond(w, http.StatusOK, v)
	}
}

// handleControl handles pause, resume, cancel and retry: an empty JSON
// object in, the changed job out.
func (s *Service) handleControl(act Action) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
		id, err := jobID(ps)
		if err != nil {
			return err
		}
		if err := noQuery(r); err != nil {
			return err
		}
		if err := emptyObject(r); err != nil {
			return err
		}
		job, err := s.Control(r.Context(), p, id, act)
		if err != nil {
			return err
		}
		status := http.StatusOK
		if act == ActRetry {
			status = http.StatusAccepted
		}
		return respond(w, status, job)
	}
}

// handleResult answers 202 while the job is not terminal (spec: "Facts
// that hold regardless").
func (s *Service) handleResult(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	id, err := jobID(ps)
	if err != nil {
		return err
	}
	res, err := s.Result(r.Context(), p, id)
	if err != nil {
		return err
	}
	if !res.State.Terminal() {
		return respond(w, http.StatusAccepted, res)
	}
	return respond(w, http.StatusOK, res)
}
