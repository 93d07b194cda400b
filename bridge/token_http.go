package bridge

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// The owner's token administration (docs/bridge-api.md, "Tokens").

func (s *Service) handleMintToken(w http.ResponseWriter, r *http.Request, _ Principal, _ httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	data, err := readBody(r)
	if err != nil {
		return err
	}
	var req TokenRequest
	if err := decodeStrict(data, &req); err != nil {
		return err
	}
	issued, err := s.IssueToken(r.Context(), req)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return respond(w, http.StatusCreated, issued)
}

func (s *Service) handleListTokens(w http.ResponseWriter, r *http.Request, _ Principal, _ httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	toks, err := s.Tokens(r.Context())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, toks)
}

func (s *Service) handleRevoke(w http.ResponseWriter, r *http.Request, _ Principal, ps httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	rev, err := s.Revoke(r.Context(), ps.ByName("client"))
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, rev)
}
