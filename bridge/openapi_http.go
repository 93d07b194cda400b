package bridge

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

func (s *Service) handleOpenAPI(w http.ResponseWriter, r *http.Request, _ Principal, _ httprouter.Params) error {
	return respond(w, http.StatusOK, s.openAPI())
}
