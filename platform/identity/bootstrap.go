package identity

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// Names of the local workspace created on a fresh data directory.
const (
	LocalTenantName      = "Local"
	LocalProjectName     = "Default"
	LocalEnvironmentName = "Development"
	localWorkspaceKey    = "local_workspace"
)

// LocalWorkspace is what Bootstrap created for the local operator.
type LocalWorkspace struct {
	OperatorID    string `json:"operator_id"`
	SystemID      string `json:"system_id"`
	TenantID      string `json:"tenant_id"`
	ProjectID     string `json:"project_id"`
	EnvironmentID string `json:"environment_id"`
}

// Bootstrap makes a data directory usable at once. It always ensures the
// system principal (authenticated by the owner token on /admin routes)
// with platform administration. The first time, it also creates a tenant,
// project and environment and the local operator (the human the built-in
// provider signs in, subject LocalOperatorSubject) with tenant_admin on
// that tenant and platform_admin, all granted by the system principal. It
// reports the local workspace and whether it was created now.
func Bootstrap(ctx context.Context, db *store.DB, now time.Time) (LocalWorkspace, bool, error) {
	now = now.UTC().Truncate(time.Millisecond)
	var ws LocalWorkspace
	var created bool
	err := db.Write(ctx, func(tx *sql.Tx) error {
		system, err := ensurePrincipal(ctx, tx, OwnerIssuer, OwnerSubject, "application", "System (daemon owner token)", now)
		if err != nil {
			return err
		}
		if err := ensureRootGrant(ctx, tx, system.ID, system.ID, now); err != nil {
			return err
		}
		found, err := readLocalWorkspace(ctx, tx)
		if err != nil || found != nil {
			if found != nil {
				ws = *found
			}
			return err
		}
		operator, err := ensurePrincipal(ctx, tx, LocalIssuer, LocalOperatorSubject, "human", "Local operator", now)
		if err != nil {
			return err
		}
		ws = LocalWorkspace{OperatorID: operator.ID, SystemID: system.ID, TenantID: newID(), ProjectID: newID(), EnvironmentID: newID()}
		if err := insertTenant(ctx, tx, Tenant{ID: ws.TenantID, Name: LocalTenantName, Revision: 1, CreatedAt: now}, system.ID); err != nil {
			return err
		}
		if err := insertProject(ctx, tx, Project{ID: ws.ProjectID, TenantID: ws.TenantID, Name: LocalProjectName, Revision: 1, CreatedAt: now}, system.ID); err != nil {
			return err
		}
		if err := insertEnvironment(ctx, tx, Environment{ID: ws.EnvironmentID, TenantID: ws.TenantID, ProjectID: ws.ProjectID,
			Name: LocalEnvironmentName, Revision: 1, CreatedAt: now}, system.ID); err != nil {
			return err
		}
		if err := insertGrant(ctx, tx, storedGrant{Grant: auth.Grant{ID: newID(), PrincipalID: operator.ID,
			Scope: auth.Scope{Tenant: ws.TenantID}, Role: auth.RoleTenantAdmin, GrantedBy: system.ID, CreatedAt: now}}); err != nil {
			return err
		}
		if err := ensureRootGrant(ctx, tx, operator.ID, system.ID, now); err != nil {
			return err
		}
		data, err := json.Marshal(ws)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_meta(key, value) VALUES (?, ?)`, localWorkspaceKey, string(data)); err != nil {
			return fmt.Errorf("identity: record local workspace: %w", err)
		}
		created = true
		return nil
	})
	if err != nil {
		return ws, false, fmt.Errorf("platform bootstrap: %w", err)
	}
	return ws, created, nil
}

// ReadLocalWorkspace returns the local workspace of a bootstrapped data
// directory (the CLI prints it), or nil.
func ReadLocalWorkspace(ctx context.Context, db *sql.DB) (*LocalWorkspace, error) {
	return readLocalWorkspace(ctx, db)
}

func readLocalWorkspace(ctx context.Context, q store.Querier) (*LocalWorkspace, error) {
	var raw string
	err := q.QueryRowContext(ctx, `SELECT value FROM platform_meta WHERE key = ?`, localWorkspaceKey).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("identity: read local workspace: %w", err)
	}
	var ws LocalWorkspace
	if err := json.Unmarshal([]byte(raw), &ws); err != nil {
		return nil, fmt.Errorf("identity: read local workspace: %w", err)
	}
	return &ws, nil
}

func ensurePrincipal(ctx context.Context, tx *sql.Tx, issuer, subject, kind, name string, now time.Time) (Principal, error) {
	p, err := principalBySubject(ctx, tx, issuer, subject)
	if err == nil || !errors.Is(err, errNoRow) {
		return p, err
	}
	p = Principal{ID: newID(), Kind: kind, Issuer: issuer, Subject: subject, Name: name, Revision: 1, CreatedAt: now, UpdatedAt: now}
	return p, insertPrincipal(ctx, tx, p, p.ID)
}

// ensureRootGrant gives principal platform_admin unless it holds it.
func ensureRootGrant(ctx context.Context, tx *sql.Tx, principal, by string, now time.Time) error {
	grants, err := currentGrants(ctx, tx, principal)
	if err != nil {
		return err
	}
	for _, g := range grants {
		if g.Scope.IsRoot() && g.Role == auth.RolePlatformAdmin {
			return nil
		}
	}
	return insertGrant(ctx, tx, storedGrant{Grant: auth.Grant{ID: newID(), PrincipalID: principal, Role: auth.RolePlatformAdmin, GrantedBy: by, CreatedAt: now}})
}
