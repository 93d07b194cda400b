package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/lang"
	"github.com/agentbridge/bridge/store"
)

// Options configures New.
type Options struct {
	DB     *store.DB
	Logger *slog.Logger
	// Now is the clock (time.Now).
	Now func() time.Time
	// NewID makes published version ids (a random UUID when nil).
	NewID func() string
}

// Service serves a project's definitions, catalog and compiler.
type Service struct {
	db          *store.DB
	log         *slog.Logger
	now         func() time.Time
	newID       func() string
	descriptors []descriptor
}

// New builds the service; it compiles the installed connector manifests.
func New(o Options) (*Service, error) {
	if o.DB == nil {
		return nil, errors.New("catalog: Options.DB is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = newUUID
	}
	ds, err := loadDescriptors()
	if err != nil {
		return nil, err
	}
	return &Service{db: o.DB, log: o.Logger, now: o.Now, newID: o.NewID, descriptors: ds}, nil
}

// maxBody bounds request bodies that carry a source: a 1 MiB source may
// grow when JSON-escaped; the source itself is checked against
// lang.MaxSourceBytes (413).
const maxBody = 8 * lang.MaxSourceBytes

// checkSource applies the source rules shared by every route that takes one.
func checkSource(source, format string) error {
	if len(source) > lang.MaxSourceBytes {
		return &api.Error{Code: api.CodeRequestTooLarge,
			Message: fmt.Sprintf("the source is %d bytes; at most %d are accepted", len(source), lang.MaxSourceBytes)}
	}
	if format != "" && format != FormatYAML {
		return api.Invalid("/format", "format must be %q", FormatYAML)
	}
	return nil
}

// requireProject answers 404 unless the path's project exists in its tenant.
func (s *Service) requireProject(ctx context.Context, q store.Querier, c *api.Call) error {
	sc := c.PathScope()
	ok, err := projectExists(ctx, q, sc.Tenant, sc.Project)
	if err != nil {
		return err
	}
	if !ok {
		return api.NotFound("project")
	}
	return nil
}

// lock is the project's current catalog lock.
func (s *Service) lock(ctx context.Context, q store.Querier, c *api.Call) (*lang.CatalogLock, error) {
	if err := s.requireProject(ctx, q, c); err != nil {
		return nil, err
	}
	return projectLock(ctx, q, c.PathScope().Project)
}
