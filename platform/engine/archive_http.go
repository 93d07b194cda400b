package engine

import (
	"context"
	"database/sql"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// ArchiveRequest is the optional body of archive, restore and purge.
type ArchiveRequest struct {
	Reason string `json:"reason,omitempty" doc:"at most 2000 characters; kept in the access audit"`
}

// registerArchive adds POST E/runs/{run}/archive, /restore and /purge
// (docs/platform-api.md, "Archiving, restoring and purging runs").
func (s *Service) registerArchive(add func(api.Route)) {
	add(api.Route{Method: "POST", Path: base + "/{run}/archive", Capability: auth.CapRunCancel, Idempotency: api.PolicyRequired,
		Handler: archiveOp(s, s.ArchiveRun), OperationID: "archiveRun", Tag: tagRuns, Summary: "Archive an ended run",
		Description: "Packs the run's accepted events and log lines into one compressed record. The run stays readable (GET E/runs/{run}, retry) " +
			"and is left out of run lists unless include_archived=true; its history, steps, logs and replay answer 409 PF-RUNTIME-STATE until it is " +
			"restored. A run that has not ended, or still has work in flight, answers 409 PF-RUNTIME-STATE; archiving an archived run answers it unchanged.",
		Request: ArchiveRequest{}, Response: RunArchive{}})
	add(api.Route{Method: "POST", Path: base + "/{run}/restore", Capability: auth.CapRunCancel, Idempotency: api.PolicyRequired,
		Handler: archiveOp(s, s.RestoreRun), OperationID: "restoreRun", Tag: tagRuns, Summary: "Restore an archived run",
		Description: "Puts the archived events and log lines back with their sequence numbers and ids, so the run appears in lists again. " +
			"Restoring a run that is not archived answers it unchanged.",
		Request: ArchiveRequest{}, Response: RunArchive{}})
	add(api.Route{Method: "POST", Path: base + "/{run}/purge", Capability: auth.CapRunCancel, Idempotency: api.PolicyRequired,
		Handler: archiveOp(s, s.PurgeRun), OperationID: "purgeRun", Tag: tagRuns, Summary: "Purge an archived run",
		Description: "Deletes an archived run with everything recorded for it (archive, incidents, tasks, file references); afterwards the run " +
			"answers 404. A run that is not archived, or that another run (a retry, a child) or a step test refers to, answers 409 PF-RUNTIME-STATE.",
		Request: ArchiveRequest{}, Response: RunPurged{}})
}

// archiveOp serves one of the three operations: decode, check, commit the
// typed method's answer with the idempotency record.
func archiveOp[T any](s *Service, op func(ctx context.Context, tx *sql.Tx, env, id string) (T, error)) func(c *api.Call) error {
	return func(c *api.Call) error {
		var req ArchiveRequest
		if err := c.DecodeOptional(&req); err != nil {
			return err
		}
		if err := checkText("reason", req.Reason, MaxReasonLen, false); err != nil {
			return err
		}
		id, err := c.UUIDParam("run", "run")
		if err != nil {
			return err
		}
		return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
			ctx, sc := c.Context(), c.PathScope()
			if err := requireEnvironment(ctx, tx, sc); err != nil {
				return nil, err
			}
			res, err := op(ctx, tx, sc.Environment, id)
			if err != nil {
				return nil, err
			}
			return &api.Result{Body: res}, nil
		}, s.notify)
	}
}
