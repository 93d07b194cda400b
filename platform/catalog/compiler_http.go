package catalog

import (
	"bytes"
	"net/http"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/lang"
)

// compileOptions decodes a compiler request and settles its catalog lock:
// the explicit one, else the project's current one when useProject.
func (s *Service) compileOptions(c *api.Call, useProject bool) ([]byte, lang.Options, error) {
	var req CompileRequest
	if err := c.Decode(&req); err != nil {
		return nil, lang.Options{}, err
	}
	if err := checkSource(req.Source, req.Format); err != nil {
		return nil, lang.Options{}, err
	}
	opts := lang.Options{Filename: req.Filename, Strict: req.Strict}
	switch raw := bytes.TrimSpace(req.Catalog); {
	case len(raw) > 0 && !bytes.Equal(raw, []byte("null")):
		if err := s.requireProject(c.Context(), s.db.Reader(), c); err != nil {
			return nil, opts, err
		}
		lock, err := lang.ParseCatalogLock(raw)
		if err != nil {
			return nil, opts, api.Invalid("/catalog", "%v", err)
		}
		opts.Catalog = lock
	case useProject:
		lock, err := s.lock(c.Context(), s.db.Reader(), c)
		if err != nil {
			return nil, opts, err
		}
		opts.Catalog = lock
	default:
		if err := s.requireProject(c.Context(), s.db.Reader(), c); err != nil {
			return nil, opts, err
		}
	}
	return []byte(req.Source), opts, nil
}

// compile serves POST P/compiler/compile: the compile result exactly as
// lang.Result.Encode gives it (what `bridge workflow compile --json`
// prints). It saves nothing; HTTP 200 can carry ok: false.
func (s *Service) compile(c *api.Call) error {
	src, opts, err := s.compileOptions(c, true)
	if err != nil {
		return err
	}
	body, err := lang.Compile(src, opts).Encode()
	if err != nil {
		return err
	}
	return c.Raw(http.StatusOK, body)
}

// validate serves POST P/compiler/validate: with a catalog it is compile
// plus validationOk; without one it is partial validation (strict has no
// effect).
func (s *Service) validate(c *api.Call) error {
	src, opts, err := s.compileOptions(c, false)
	if err != nil {
		return err
	}
	body, err := lang.Validate(src, opts).Encode()
	if err != nil {
		return err
	}
	return c.Raw(http.StatusOK, body)
}
