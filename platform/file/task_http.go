package file

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// humanFilesBase is E/human-tasks/{identifier}/files relative to
// api.Prefix (the parameter name is the human task routes').
const humanFilesBase = "/tenants/{tenant}/projects/{project}/environments/{environment}/human-tasks/{identifier}/files"

// taskFilesBase is E/tasks/files relative to api.Prefix; the worker task
// travels in the body (or the query of chunk), as for E/tasks/*.
const taskFilesBase = "/tenants/{tenant}/projects/{project}/environments/{environment}/tasks/files"

// FileRef names a file in the task routes' bodies.
type FileRef struct {
	FileID string `json:"file_id" api:"required" format:"uuid"`
}

// WorkerRef names the worker task and its lease in the worker routes'
// bodies.
type WorkerRef struct {
	TaskID   string `json:"task_id" api:"required" format:"uuid" doc:"a task leased to worker_id by the calling principal"`
	WorkerID string `json:"worker_id" api:"required" doc:"the worker_id of the claim"`
}

// WorkerCreateRequest is the body of POST E/tasks/files/create.
type WorkerCreateRequest struct {
	WorkerRef
	CreateRequest
}

// WorkerFileRequest is the body of POST E/tasks/files/finish, /read and
// /download.
type WorkerFileRequest struct {
	WorkerRef
	FileRef
}

// humanAccessNote and workerAccessNote document who may use the routes.
const humanAccessNote = " Only for a principal who may act on the task now: the holder of a claimed task; for an open task one of its " +
	"assignees, or anyone with human_task.complete when it has none (409 PF-RUNTIME-STATE otherwise, also for a completed or closed task)."

const humanReadNote = " Readable are the files of the task's run: uploaded through one of its tasks or referred to by its values " +
	"(input, signals, human task data, task outputs); other files answer 404."

const workerAccessNote = " Only for the lease holder: task_id leased to worker_id by the calling principal (404 for a task the " +
	"environment never had, 409 PF-RUNTIME-STATE otherwise)."

const workerReadNote = " Readable are the files of the task's run: uploaded through one of its tasks or referred to by its values; " +
	"other files answer 404."

// registerTasks adds the human task and worker file routes.
func (s *Service) registerTasks(a *api.API, r *httprouter.Router) {
	max := s.limits.MaxChunkBytes
	post := func(path string, capability auth.Capability, h api.HandlerFunc, op, summary, desc string, req, resp any) api.Route {
		rt := api.Route{Method: http.MethodPost, Path: path, Capability: capability, Handler: h, OperationID: op, Tag: tagFiles,
			Summary: summary, Description: desc, Request: req, Response: resp}
		if _, ok := req.(CreateRequest); ok {
			rt.Status = http.StatusCreated
		}
		if _, ok := req.(WorkerCreateRequest); ok {
			rt.Status = http.StatusCreated
		}
		return rt
	}
	idx := api.Param{Name: "index", Type: "integer", Description: "the chunk's index, from 0"}
	fileID := api.Param{Name: "file_id", Type: "string", Description: "the file"}
	routes := []api.Route{
		post(humanFilesBase+"/create", auth.CapHumanTaskComplete, s.humanCreate, "createHumanTaskFile", "Start an upload for a human task",
			"Body as POST E/files; the file's origin is the task."+humanAccessNote, CreateRequest{}, File{}),
		post(humanFilesBase+"/finish", auth.CapHumanTaskComplete, s.finishVia(s.humanFile(true)), "finishHumanTaskFile", "Finish an upload of a human task",
			"Body {file_id}: an upload started through this task."+finishNote+humanAccessNote, FileRef{}, File{}),
		post(humanFilesBase+"/read", auth.CapHumanTaskRead, s.readVia(s.humanFile(false)), "readHumanTaskFile", "Read a file of a human task",
			"Body {file_id}."+humanReadNote, FileRef{}, File{}),
		post(humanFilesBase+"/download", auth.CapHumanTaskRead, s.downloadVia(s.humanFile(false)), "downloadHumanTaskFile", "Download a file of a human task",
			"Body {file_id}."+humanReadNote+downloadNote, FileRef{}, nil),
		post(taskFilesBase+"/create", auth.CapTaskClaim, s.workerCreate, "createTaskFile", "Start an upload for a worker task",
			"Body as POST E/files with task_id and worker_id; the file's origin is the task."+workerAccessNote, WorkerCreateRequest{}, File{}),
		post(taskFilesBase+"/finish", auth.CapTaskClaim, s.finishVia(s.workerFile), "finishTaskFile", "Finish an upload of a worker task",
			"An upload started through this task."+finishNote+workerAccessNote, WorkerFileRequest{}, File{}),
		post(taskFilesBase+"/read", auth.CapTaskClaim, s.readVia(s.workerFile), "readTaskFile", "Read a file of a worker task's run",
			workerReadNote+workerAccessNote, WorkerFileRequest{}, File{}),
		post(taskFilesBase+"/download", auth.CapTaskClaim, s.downloadVia(s.workerFile), "downloadTaskFile", "Download a file of a worker task's run",
			workerReadNote+downloadNote+workerAccessNote, WorkerFileRequest{}, nil),
	}
	hc := post(humanFilesBase+"/chunk", auth.CapHumanTaskComplete, s.chunkVia(s.humanChunkRef), "putHumanTaskFileChunk", "Send one chunk of a human task's upload",
		"Query file_id (an upload started through this task) and index."+chunkNote+humanAccessNote, nil, File{})
	hc.MaxBody, hc.Query = max, []api.Param{fileID, idx}
	wc := post(taskFilesBase+"/chunk", auth.CapTaskClaim, s.chunkVia(s.workerChunkRef), "putTaskFileChunk", "Send one chunk of a worker task's upload",
		"Query task_id, worker_id, file_id (an upload started through this task) and index."+chunkNote+workerAccessNote, nil, File{})
	wc.MaxBody, wc.Query = max, []api.Param{{Name: "task_id", Type: "string", Description: "the leased task"},
		{Name: "worker_id", Type: "string", Description: "the worker_id of the claim"}, fileID, idx}
	for _, rt := range append(routes, hc, wc) {
		a.Handle(r, rt)
	}
}

// humanSurface checks that the caller may use human task {identifier}
// (act: may complete it now) and answers the surface.
func (s *Service) humanSurface(c *api.Call, act bool) (surface, error) {
	id, err := c.UUIDParam("identifier", "human task")
	if err != nil {
		return surface{}, err
	}
	sc := c.PathScope()
	if err := requireEnvironment(c.Context(), s.db.Reader(), sc); err != nil {
		return surface{}, err
	}
	run, err := s.tasks.HumanTask(c.Context(), sc.Environment, id, c.Caller.Principal.ID, act)
	if err != nil {
		return surface{}, err
	}
	return surface{Scope: sc, By: c.Caller.Principal.ID, Origin: Origin{Kind: OriginHumanTask, ID: id, RunID: run}}, nil
}

// workerSurface checks the lease of ref and answers the surface.
func (s *Service) workerSurface(c *api.Call, ref WorkerRef) (surface, error) {
	if !auth.IsCanonicalUUID(ref.TaskID) {
		return surface{}, api.Invalid("/task_id", "task_id must be a canonical lowercase UUID")
	}
	if ref.WorkerID == "" {
		return surface{}, api.Invalid("/worker_id", "worker_id is the worker_id of the claim")
	}
	sc := c.PathScope()
	if err := requireEnvironment(c.Context(), s.db.Reader(), sc); err != nil {
		return surface{}, err
	}
	run, err := s.tasks.LeasedTask(c.Context(), sc.Environment, ref.TaskID, ref.WorkerID, c.Caller.Principal.ID)
	if err != nil {
		return surface{}, err
	}
	return surface{Scope: sc, By: c.Caller.Principal.ID, Origin: Origin{Kind: OriginTask, ID: ref.TaskID, RunID: run}}, nil
}

// fileRef validates the file_id of a body.
func fileRef(ref FileRef) (string, error) {
	if !auth.IsCanonicalUUID(ref.FileID) {
		return "", api.Invalid("/file_id", "file_id must be a canonical lowercase UUID")
	}
	return ref.FileID, nil
}

// via answers the surface of a task route's request and the file it
// names (humanFile, workerFile, humanChunkRef, workerChunkRef).
type via func(c *api.Call) (surface, string, error)

// finishVia, readVia, downloadVia and chunkVia serve a task route with
// the surface and file that get answers.
func (s *Service) finishVia(get via) api.HandlerFunc {
	return func(c *api.Call) error {
		sf, id, err := get(c)
		if err != nil {
			return err
		}
		f, err := s.Finish(c.Context(), sf, id)
		if err != nil {
			return err
		}
		return c.OK(f)
	}
}

func (s *Service) readVia(get via) api.HandlerFunc {
	return func(c *api.Call) error {
		sf, id, err := get(c)
		if err != nil {
			return err
		}
		f, err := s.Get(c.Context(), sf, id)
		if err != nil {
			return err
		}
		return c.OK(f)
	}
}

func (s *Service) downloadVia(get via) api.HandlerFunc {
	return func(c *api.Call) error {
		sf, id, err := get(c)
		if err != nil {
			return err
		}
		return s.serve(c, sf, id)
	}
}

func (s *Service) chunkVia(get via) api.HandlerFunc {
	return func(c *api.Call) error {
		index, err := chunkIndex(c)
		if err != nil {
			return err
		}
		if err := checkOctets(c); err != nil {
			return err
		}
		sf, id, err := get(c)
		if err != nil {
			return err
		}
		f, err := s.Chunk(c.Context(), sf, id, index, c.R.Body)
		if err != nil {
			return err
		}
		return c.OK(f)
	}
}

func (s *Service) humanCreate(c *api.Call) error {
	var req CreateRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	sf, err := s.humanSurface(c, true)
	if err != nil {
		return err
	}
	f, err := s.Create(c.Context(), sf, req)
	if err != nil {
		return err
	}
	return created(c, f)
}

// humanFile decodes {file_id} and checks the task (act: may complete it).
func (s *Service) humanFile(act bool) via {
	return func(c *api.Call) (surface, string, error) {
		var ref FileRef
		if err := c.Decode(&ref); err != nil {
			return surface{}, "", err
		}
		id, err := fileRef(ref)
		if err != nil {
			return surface{}, "", err
		}
		sf, err := s.humanSurface(c, act)
		return sf, id, err
	}
}

// queryIDs reads query parameters that hold ids (all required).
func queryIDs(c *api.Call, names ...string) ([]string, error) {
	out := make([]string, len(names))
	for i, n := range names {
		v, err := c.Query(n)
		if err != nil {
			return nil, err
		}
		if n != "worker_id" && !auth.IsCanonicalUUID(v) {
			return nil, api.InvalidParameter(api.CodeValidation, n, "%s must be a canonical lowercase UUID", n)
		}
		if v == "" {
			return nil, api.InvalidParameter(api.CodeValidation, n, "%s is required", n)
		}
		out[i] = v
	}
	return out, nil
}

// humanChunkRef reads the file_id query of a human task chunk.
func (s *Service) humanChunkRef(c *api.Call) (surface, string, error) {
	ids, err := queryIDs(c, "file_id")
	if err != nil {
		return surface{}, "", err
	}
	sf, err := s.humanSurface(c, true)
	return sf, ids[0], err
}

func (s *Service) workerCreate(c *api.Call) error {
	var req WorkerCreateRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	sf, err := s.workerSurface(c, req.WorkerRef)
	if err != nil {
		return err
	}
	f, err := s.Create(c.Context(), sf, req.CreateRequest)
	if err != nil {
		return err
	}
	return created(c, f)
}

// workerFile decodes {task_id, worker_id, file_id} and checks the lease.
func (s *Service) workerFile(c *api.Call) (surface, string, error) {
	var req WorkerFileRequest
	if err := c.Decode(&req); err != nil {
		return surface{}, "", err
	}
	id, err := fileRef(req.FileRef)
	if err != nil {
		return surface{}, "", err
	}
	sf, err := s.workerSurface(c, req.WorkerRef)
	return sf, id, err
}

// workerChunkRef reads the task_id, worker_id and file_id query of a
// worker chunk and checks the lease.
func (s *Service) workerChunkRef(c *api.Call) (surface, string, error) {
	ids, err := queryIDs(c, "task_id", "worker_id", "file_id")
	if err != nil {
		return surface{}, "", err
	}
	sf, err := s.workerSurface(c, WorkerRef{TaskID: ids[0], WorkerID: ids[1]})
	return sf, ids[2], err
}
