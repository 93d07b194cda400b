package activation

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// Test activations bind the test versions of step tests and draft test
// activations (package platform/steptest; catalog.TestMarker): their
// workflow id carries the marker, so they never collide with the
// environment's real activation of the workflow, and E/activations leaves
// them out. Reading one by id still works: test runs name it.

// notTest is the SQL condition that leaves test activations out.
const notTest = ` AND instr(workflow_id, '#') = 0`

// TestBinding is a test activation to store with InsertTest.
type TestBinding struct {
	ID, Tenant, Project, Environment string
	PublishedVersionID               string
	// WorkflowID is the test version's definition id (with the marker).
	WorkflowID      string
	WorkflowVersion int
	Digest          string
	InputDefaults   json.RawMessage
	Bindings        map[string]string
	By              string
	At              time.Time
}

// InsertTest stores an active test activation in tx.
func InsertTest(ctx context.Context, tx *sql.Tx, b TestBinding) error {
	defaults := b.InputDefaults
	if len(defaults) == 0 {
		defaults = json.RawMessage("{}")
	}
	bindings := b.Bindings
	if bindings == nil {
		bindings = map[string]string{}
	}
	return insertActivation(ctx, tx, b.Tenant, Activation{ID: b.ID, EnvironmentID: b.Environment, ProjectID: b.Project,
		PublishedVersionID: b.PublishedVersionID, WorkflowID: b.WorkflowID, WorkflowVersion: b.WorkflowVersion, Digest: b.Digest,
		InputDefaults: defaults, ConnectionBindings: bindings, Status: StatusActive, Revision: 1, CreatedAt: b.At, CreatedBy: b.By})
}

// RetireTest retires an active test activation in tx (no new runs start
// through it; its runs stay readable). Retiring a retired one does
// nothing.
func RetireTest(ctx context.Context, tx *sql.Tx, env, id, by, reason string, at time.Time) error {
	a, err := getActivation(ctx, tx, env, id)
	if err != nil || a.Status != StatusActive {
		return err
	}
	a.Status, a.Revision, a.RetiredAt, a.RetiredBy, a.RetirementReason = StatusRetired, a.Revision+1, &at, &by, &reason
	return retireActivation(ctx, tx, a)
}
