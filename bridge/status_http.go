package bridge

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

func (s *Service) handleStatus(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	st, err := s.Status(r.Context(), p)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, st)
}
