package engine

import (
	"context"
	"errors"
	"strings"
)

// HumanTask answers the run of human task id of env for the file routes
// E/human-tasks/{identifier}/files/* (docs/platform-api.md, "Files"):
// with act, only when principal may complete the task now, by the rules
// of its completion (the holder of a claimed task; for an open task an
// assignee, or anyone when it has none).
func (s *Service) HumanTask(ctx context.Context, env, id, principal string, act bool) (string, error) {
	h, err := getHuman(ctx, s.db.Reader(), env, id)
	if err != nil {
		return "", err
	}
	if !act {
		return h.RunID, nil
	}
	switch {
	case h.Status == humanCompleted || h.Status == humanClosed:
		return "", refused(CodeRuntimeState, "human task %s is %s", id, h.Status)
	case h.Status == humanClaimed && h.ClaimedBy != principal:
		return "", refused(CodeRuntimeState, "human task %s is claimed by %s; only its holder acts on it", id, h.ClaimedBy)
	case h.Status == humanOpen && len(h.Assignees) > 0 && !assignedTo(h.Assignees, principal):
		return "", refused(CodeRuntimeState, "human task %s is assigned to %s; claim it first", id, strings.Join(h.Assignees, ", "))
	}
	return h.RunID, nil
}

// LeasedTask answers the run of worker task id of env when it is leased
// to worker by principal, for the file routes E/tasks/files/*: 404 for a
// task env never had, 409 PF-RUNTIME-STATE for one not (or no longer)
// leased to that holder.
func (s *Service) LeasedTask(ctx context.Context, env, id, worker, principal string) (string, error) {
	rd := s.db.Reader()
	w, err := s.getWorkerTask(ctx, rd, env, id)
	if errors.Is(err, errNotFound) {
		end, err := getTaskEnd(ctx, rd, env, id)
		if errors.Is(err, errNotFound) {
			return "", notFound("task")
		}
		if err != nil {
			return "", err
		}
		return "", endedConflict(id, &end)
	}
	if err != nil {
		return "", err
	}
	if w.Status != taskLeased {
		return "", refused(CodeRuntimeState, "task %s is not leased: claim it first", id)
	}
	if w.WorkerID != worker || w.PrincipalID != principal {
		return "", refused(CodeRuntimeState, "task %s is leased by another worker", id)
	}
	return w.RunID, nil
}
