package callbacks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/store"
)

const domainColumns = `id, domain, include_subdomains, description, created_at, updated_at`

var domainResource = &resource{
	name:  "authorized-domains",
	table: "callback_authorized_domains",
	fields: map[string]field{
		"id":                {col: "id", kind: kString, sortable: true},
		"domain":            {col: "domain", kind: kString, sortable: true},
		"includeSubdomains": {col: "include_subdomains", kind: kBool},
		"description":       {col: "description", kind: kString},
		"createdAt":         {col: "created_at", kind: kTime, sortable: true},
		"updatedAt":         {col: "updated_at", kind: kTime, sortable: true},
	},
	defaultSort: []SortOrder{{Field: "domain"}},
}

func scanDomain() ([]any, func() (AuthorizedDomain, error)) {
	var d AuthorizedDomain
	var inc int64
	var created, updated int64
	return []any{&d.ID, &d.Domain, &inc, &d.Description, &created, &updated}, func() (AuthorizedDomain, error) {
		d.IncludeSubdomains = inc != 0
		d.CreatedAt, d.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
		return d, nil
	}
}

func getDomain(ctx context.Context, q store.Querier, id string) (AuthorizedDomain, error) {
	dests, build := scanDomain()
	err := q.QueryRowContext(ctx, `SELECT `+domainColumns+` FROM callback_authorized_domains WHERE id = ?`, id).Scan(dests...)
	if errors.Is(err, sql.ErrNoRows) {
		return AuthorizedDomain{}, errNotFound("authorized domain " + id)
	}
	if err != nil {
		return AuthorizedDomain{}, fmt.Errorf("callbacks: read domain: %w", err)
	}
	return build()
}

func listDomains(ctx context.Context, q store.Querier) ([]AuthorizedDomain, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+domainColumns+` FROM callback_authorized_domains ORDER BY domain`)
	if err != nil {
		return nil, fmt.Errorf("callbacks: list domains: %w", err)
	}
	defer rows.Close()
	var out []AuthorizedDomain
	for rows.Next() {
		dests, build := scanDomain()
		if err := rows.Scan(dests...); err != nil {
			return nil, fmt.Errorf("callbacks: list domains: %w", err)
		}
		d, _ := build()
		out = append(out, d)
	}
	return out, rows.Err()
}

func (s *Service) createDomain(ctx context.Context, in DomainInput) (AuthorizedDomain, error) {
	d, err := in.normalize()
	if err != nil {
		return d, err
	}
	now := s.nowMs()
	d.ID, d.CreatedAt, d.UpdatedAt = newID(), now, now
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO callback_authorized_domains (`+domainColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
			d.ID, d.Domain, boolInt(d.IncludeSubdomains), d.Description, store.Millis(now), store.Millis(now))
		return err
	})
	if isUnique(err) {
		return d, errorf(EConflict, "domain %s is already authorized", d.Domain)
	}
	if err != nil {
		return d, fmt.Errorf("callbacks: create domain: %w", err)
	}
	s.reloadDomains(ctx)
	return d, nil
}

func (s *Service) updateDomain(ctx context.Context, id string, in DomainInput) (AuthorizedDomain, error) {
	d, err := in.normalize()
	if err != nil {
		return d, err
	}
	d.ID = id
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		old, err := getDomain(ctx, tx, id)
		if err != nil {
			return err
		}
		d.CreatedAt, d.UpdatedAt = old.CreatedAt, s.nowMs()
		_, err = tx.Exec(`UPDATE callback_authorized_domains SET domain = ?, include_subdomains = ?, description = ?, updated_at = ? WHERE id = ?`,
			d.Domain, boolInt(d.IncludeSubdomains), d.Description, store.Millis(d.UpdatedAt), id)
		return err
	})
	if isUnique(err) {
		return d, errorf(EConflict, "domain %s is already authorized", d.Domain)
	}
	if err != nil {
		return d, wrapStore("update domain", err)
	}
	s.reloadDomains(ctx)
	return d, nil
}

func (s *Service) deleteDomain(ctx context.Context, id string) error {
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM callback_authorized_domains WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNotFound("authorized domain " + id)
		}
		return nil
	})
	if err != nil {
		return wrapStore("delete domain", err)
	}
	s.reloadDomains(ctx)
	return nil
}

// reloadDomains refreshes the allow-list used at dispatch; deliveries to a
// host that left it are cancelled from then on.
func (s *Service) reloadDomains(ctx context.Context) {
	ds, err := listDomains(ctx, s.db.Reader())
	if err != nil {
		s.log.Error("callbacks: reload authorized domains", "err", err)
		return
	}
	s.reg.setDomains(ds)
	s.disp.kickAll()
}

// wrapStore keeps coded errors as they are and wraps the others.
func wrapStore(op string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return fmt.Errorf("callbacks: %s: %w", op, err)
}

// domain reads one authorized domain (404 when unknown).
func (s *Service) domain(ctx context.Context, id string) (AuthorizedDomain, error) {
	return getDomain(ctx, s.db.Reader(), id)
}

// filterDomains runs a FilterRequest on the authorized domains.
func (s *Service) filterDomains(ctx context.Context, req FilterRequest) (*PaginationResponse[AuthorizedDomain], error) {
	return filterWith(ctx, s, domainResource, domainColumns, scanDomain, req)
}
