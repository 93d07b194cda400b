package bridge

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// handlePostMessage: POST /v1/bridge/jobs/{id}/messages, {text} and
// nothing else (docs/bridge-api.md, "Messages").
func (s *Service) handlePostMessage(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	id, err := jobID(ps)
	if err != nil {
		return err
	}
	var req MessageRequest
	key, err := decodeChange(r, &req)
	if err != nil {
		return err
	}
	out, replayed, err := s.PostMessage(r.Context(), p, id, req, key)
	if err != nil {
		return err
	}
	if replayed != nil {
		return replayStored(w, replayed)
	}
	return respond(w, http.StatusAccepted, out)
}
