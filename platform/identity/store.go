package identity

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// errNoRow reports a missing row to callers that map it to 404.
var errNoRow = errors.New("identity: no such row")

func noRow(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRow
	}
	return err
}

// --- tenants, projects, environments

func insertTenant(ctx context.Context, tx *sql.Tx, t Tenant, by string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_tenants(id, name, revision, created_at, created_by) VALUES (?, ?, ?, ?, ?)`,
		t.ID, t.Name, t.Revision, store.Millis(t.CreatedAt), by)
	if err != nil {
		return fmt.Errorf("identity: insert tenant: %w", err)
	}
	return nil
}

func getTenant(ctx context.Context, q store.Querier, id string) (Tenant, error) {
	var t Tenant
	var at int64
	err := q.QueryRowContext(ctx, `SELECT id, name, revision, created_at FROM platform_tenants WHERE id = ?`, id).
		Scan(&t.ID, &t.Name, &t.Revision, &at)
	if err != nil {
		return t, noRow(err)
	}
	t.CreatedAt = store.FromMillis(at)
	return t, nil
}

func insertProject(ctx context.Context, tx *sql.Tx, p Project, by string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_projects(id, tenant_id, name, revision, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?)`,
		p.ID, p.TenantID, p.Name, p.Revision, store.Millis(p.CreatedAt), by)
	if err != nil {
		return fmt.Errorf("identity: insert project: %w", err)
	}
	return nil
}

const projectCols = `id, tenant_id, name, revision, created_at`

func scanProject(sc interface{ Scan(...any) error }) (Project, error) {
	var p Project
	var at int64
	if err := sc.Scan(&p.ID, &p.TenantID, &p.Name, &p.Revision, &at); err != nil {
		return p, noRow(err)
	}
	p.CreatedAt = store.FromMillis(at)
	return p, nil
}

func getProject(ctx context.Context, q store.Querier, tenant, id string) (Project, error) {
	return scanProject(q.QueryRowContext(ctx, `SELECT `+projectCols+` FROM platform_projects WHERE id = ? AND tenant_id = ?`, id, tenant))
}

func listProjects(ctx context.Context, q store.Querier, tenant, after string, limit int) ([]Project, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+projectCols+` FROM platform_projects WHERE tenant_id = ? AND id > ? ORDER BY id LIMIT ?`, tenant, after, limit)
	if err != nil {
		return nil, fmt.Errorf("identity: list projects: %w", err)
	}
	defer rows.Close()
	var out []Project
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, fmt.Errorf("identity: list projects: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func insertEnvironment(ctx context.Context, tx *sql.Tx, e Environment, by string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_environments(id, tenant_id, project_id, name, revision, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.TenantID, e.ProjectID, e.Name, e.Revision, store.Millis(e.CreatedAt), by)
	if err != nil {
		return fmt.Errorf("identity: insert environment: %w", err)
	}
	return nil
}

const environmentCols = `id, tenant_id, project_id, name, revision, created_at`

func scanEnvironment(sc interface{ Scan(...any) error }) (Environment, error) {
	var e Environment
	var at int64
	if err := sc.Scan(&e.ID, &e.TenantID, &e.ProjectID, &e.Name, &e.Revision, &at); err != nil {
		return e, noRow(err)
	}
	e.CreatedAt = store.FromMillis(at)
	return e, nil
}

func getEnvironment(ctx context.Context, q store.Querier, tenant, project, id string) (Environment, error) {
	return scanEnvironment(q.QueryRowContext(ctx, `SELECT `+environmentCols+` FROM platform_environments
		WHERE id = ? AND project_id = ? AND tenant_id = ?`, id, project, tenant))
}

func listEnvironments(ctx context.Context, q store.Querier, tenant, project, after string, limit int) ([]Environment, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+environmentCols+` FROM platform_environments
		WHERE tenant_id = ? AND project_id = ? AND id > ? ORDER BY id LIMIT ?`, tenant, project, after, limit)
	if err != nil {
		return nil, fmt.Errorf("identity: list environments: %w", err)
	}
	defer rows.Close()
	var out []Environment
	for rows.Next() {
		e, err := scanEnvironment(rows)
		if err != nil {
			return nil, fmt.Errorf("identity: list environments: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// tenantTree loads a tenant with all its projects and environments (for
// the identity view's workspaces).
func tenantTree(ctx context.Context, q store.Querier, tenant string) (Tenant, []Project, []Environment, error) {
	t, err := getTenant(ctx, q, tenant)
	if err != nil {
		return t, nil, nil, err
	}
	projects, err := listProjects(ctx, q, tenant, "", -1)
	if err != nil {
		return t, nil, nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT `+environmentCols+` FROM platform_environments WHERE tenant_id = ? ORDER BY id`, tenant)
	if err != nil {
		return t, nil, nil, fmt.Errorf("identity: list environments: %w", err)
	}
	defer rows.Close()
	var envs []Environment
	for rows.Next() {
		e, err := scanEnvironment(rows)
		if err != nil {
			return t, nil, nil, fmt.Errorf("identity: list environments: %w", err)
		}
		envs = append(envs, e)
	}
	return t, projects, envs, rows.Err()
}

// --- principals

const principalCols = `id, kind, issuer, subject, name, disabled, revision, created_at, updated_at`

func scanPrincipal(sc interface{ Scan(...any) error }) (Principal, error) {
	var p Principal
	var created, updated int64
	if err := sc.Scan(&p.ID, &p.Kind, &p.Issuer, &p.Subject, &p.Name, &p.Disabled, &p.Revision, &created, &updated); err != nil {
		return p, noRow(err)
	}
	p.CreatedAt, p.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return p, nil
}

func insertPrincipal(ctx context.Context, tx *sql.Tx, p Principal, by string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_principals(id, kind, issuer, subject, name, disabled, revision, created_at, updated_at, created_by)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, p.ID, p.Kind, p.Issuer, p.Subject, p.Name, p.Disabled, p.Revision, store.Millis(p.CreatedAt), store.Millis(p.UpdatedAt), by)
	if err != nil {
		return fmt.Errorf("identity: insert principal: %w", err)
	}
	return nil
}

func getPrincipal(ctx context.Context, q store.Querier, id string) (Principal, error) {
	return scanPrincipal(q.QueryRowContext(ctx, `SELECT `+principalCols+` FROM platform_principals WHERE id = ?`, id))
}

func principalBySubject(ctx context.Context, q store.Querier, issuer, subject string) (Principal, error) {
	return scanPrincipal(q.QueryRowContext(ctx, `SELECT `+principalCols+` FROM platform_principals WHERE issuer = ? AND subject = ?`, issuer, subject))
}

// principalFilter narrows GET /admin/principals.
type principalFilter struct {
	Kind, Issuer, Subject string
}

func listPrincipals(ctx context.Context, q store.Querier, f principalFilter, after string, limit int) ([]Principal, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+principalCols+` FROM platform_principals
		WHERE id > ? AND (? = '' OR kind = ?) AND (? = '' OR issuer = ?) AND (? = '' OR subject = ?)
		ORDER BY id LIMIT ?`, after, f.Kind, f.Kind, f.Issuer, f.Issuer, f.Subject, f.Subject, limit)
	if err != nil {
		return nil, fmt.Errorf("identity: list principals: %w", err)
	}
	defer rows.Close()
	var out []Principal
	for rows.Next() {
		p, err := scanPrincipal(rows)
		if err != nil {
			return nil, fmt.Errorf("identity: list principals: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func setPrincipalDisabled(ctx context.Context, tx *sql.Tx, id string, disabled bool, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE platform_principals SET disabled = ?, revision = revision + 1, updated_at = ? WHERE id = ?`, disabled, store.Millis(now), id)
	if err != nil {
		return fmt.Errorf("identity: update principal: %w", err)
	}
	return nil
}

// --- grants

const grantCols = `id, principal_id, tenant_id, project_id, environment_id, resource_id, role, capabilities, granted_by, created_at, revoked_at`

func scanGrant(sc interface{ Scan(...any) error }) (storedGrant, error) {
	var g storedGrant
	var caps string
	var created int64
	var revoked sql.NullInt64
	if err := sc.Scan(&g.ID, &g.PrincipalID, &g.Scope.Tenant, &g.Scope.Project, &g.Scope.Environment, &g.Scope.Resource,
		&g.Role, &caps, &g.GrantedBy, &created, &revoked); err != nil {
		return g, noRow(err)
	}
	g.Capabilities = splitCaps(caps)
	g.CreatedAt = store.FromMillis(created)
	if revoked.Valid {
		t := store.FromMillis(revoked.Int64)
		g.RevokedAt, g.Revoked = &t, true
	}
	return g, nil
}

func insertGrant(ctx context.Context, tx *sql.Tx, g storedGrant) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_grants(id, principal_id, tenant_id, project_id, environment_id, resource_id, role, capabilities, granted_by, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, g.ID, g.PrincipalID, g.Scope.Tenant, g.Scope.Project, g.Scope.Environment, g.Scope.Resource,
		string(g.Role), joinCaps(g.Capabilities), g.GrantedBy, store.Millis(g.CreatedAt))
	if err != nil {
		return fmt.Errorf("identity: insert grant: %w", err)
	}
	return nil
}

func getGrant(ctx context.Context, q store.Querier, id string) (storedGrant, error) {
	return scanGrant(q.QueryRowContext(ctx, `SELECT `+grantCols+` FROM platform_grants WHERE id = ?`, id))
}

// currentGrants returns the unrevoked grants of a principal in id order.
func currentGrants(ctx context.Context, q store.Querier, principal string) ([]storedGrant, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+grantCols+` FROM platform_grants WHERE principal_id = ? AND revoked_at IS NULL ORDER BY id`, principal)
	if err != nil {
		return nil, fmt.Errorf("identity: read grants: %w", err)
	}
	defer rows.Close()
	var out []storedGrant
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, fmt.Errorf("identity: read grants: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// grantFilter narrows GET /api/v1/tenants/{tenant}/grants.
type grantFilter struct {
	Principal      string
	IncludeRevoked bool
}

func listTenantGrants(ctx context.Context, q store.Querier, tenant string, f grantFilter, after string, limit int) ([]storedGrant, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+grantCols+` FROM platform_grants
		WHERE tenant_id = ? AND id > ? AND (? = '' OR principal_id = ?) AND (? OR revoked_at IS NULL)
		ORDER BY id LIMIT ?`, tenant, after, f.Principal, f.Principal, f.IncludeRevoked, limit)
	if err != nil {
		return nil, fmt.Errorf("identity: list grants: %w", err)
	}
	defer rows.Close()
	var out []storedGrant
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, fmt.Errorf("identity: list grants: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

func revokeGrant(ctx context.Context, tx *sql.Tx, id, by string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE platform_grants SET revoked_at = ?, revoked_by = ? WHERE id = ? AND revoked_at IS NULL`, store.Millis(now), by, id)
	if err != nil {
		return fmt.Errorf("identity: revoke grant: %w", err)
	}
	return nil
}
