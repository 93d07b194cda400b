package file

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// tagFiles is the OpenAPI tag of the routes.
const tagFiles = "Files"

// filesBase is E/files relative to api.Prefix.
const filesBase = "/tenants/{tenant}/projects/{project}/environments/{environment}/files"

// chunkNote documents the chunk bodies of every surface.
const chunkNote = " The body is the chunk's raw bytes (Content-Type application/octet-stream): every chunk but the last has exactly " +
	"chunk_size bytes, the last the rest (422 PF-VALIDATION otherwise). Chunks arrive in index order: the next one (received_chunks) is " +
	"stored; an earlier one sent again with the same bytes changes nothing, with other bytes answers 409 PF-FILE-CHUNK-CONFLICT; a later " +
	"one answers 409 PF-FILE-CHUNK-ORDER. A finished or expired upload answers 409 PF-FILE-STATE."

// finishNote documents finish on every surface.
const finishNote = " Re-reads the stored bytes and checks the declared size and SHA-256; only then is the file ready (visible and " +
	"downloadable). Missing chunks answer 409 PF-FILE-INCOMPLETE; another digest answers 422 PF-FILE-DIGEST and discards the upload. " +
	"Finishing a ready file answers it unchanged."

// downloadNote documents downloads on every surface.
const downloadNote = " Streams the content with Content-Length, Content-Type (the file's media_type), ETag (the quoted SHA-256) and " +
	"Accept-Ranges; a Range header (RFC 9110, one or several ranges; If-Range with the ETag) answers 206 or 416. A file still uploading " +
	"answers 409 PF-FILE-STATE."

// Register adds the file routes to a.
func (s *Service) Register(a *api.API, r *httprouter.Router) {
	max := s.limits.MaxChunkBytes
	routes := []api.Route{
		{Method: http.MethodPost, Path: filesBase, Capability: auth.CapFileManage, Handler: s.create,
			OperationID: "createFile", Tag: tagFiles, Summary: "Start an upload",
			Description: "Declares a file (name, size, SHA-256, media type, chunk size) and answers it with status uploading; send its chunks, " +
				"then finish it. The environment's file count and bytes are bounded (platform.files.max-files, max-total-bytes): beyond, " +
				"429 PF-OPERATION-CAPACITY. An upload not finished within platform.files.upload-ttl of its last chunk is reclaimed.",
			Request: CreateRequest{}, Response: File{}, Status: http.StatusCreated},
		{Method: http.MethodGet, Path: filesBase, Capability: auth.CapFileRead, Page: true, Handler: s.list,
			OperationID: "listFiles", Tag: tagFiles, Summary: "List the environment's files",
			Description: "Uploading and ready files of every origin (E/files, human tasks, worker tasks), in id order.",
			Query:       []api.Param{{Name: "status", Type: "string", Description: "uploading or ready (default: both)"}},
			Response:    api.Page[File]{}},
		{Method: http.MethodGet, Path: filesBase + "/{identifier}", Capability: auth.CapFileRead, Handler: s.readVia(envFile),
			OperationID: "getFile", Tag: tagFiles, Summary: "Read a file", Description: "received_chunks says where an upload resumes.",
			Response: File{}},
		{Method: http.MethodDelete, Path: filesBase + "/{identifier}", Capability: auth.CapFileManage, Handler: s.remove,
			OperationID: "deleteFile", Tag: tagFiles, Summary: "Delete a file",
			Description: "Abandons an upload, or deletes a ready file: it disappears from these routes at once; its content is removed " +
				"when no run that has not ended refers to it (retained_for_runs counts those).",
			Response: Deletion{}},
		{Method: http.MethodPost, Path: filesBase + "/{identifier}/chunks", Capability: auth.CapFileManage, Handler: s.chunkVia(envFile), MaxBody: max,
			OperationID: "putFileChunk", Tag: tagFiles, Summary: "Send one chunk of an upload",
			Description: "Query index (0 .. chunks-1)." + chunkNote,
			Query:       []api.Param{{Name: "index", Type: "integer", Description: "the chunk's index, from 0"}}, Response: File{}},
		{Method: http.MethodPost, Path: filesBase + "/{identifier}/finish", Capability: auth.CapFileManage, Handler: s.finishVia(envFileOptionalBody),
			OperationID: "finishFile", Tag: tagFiles, Summary: "Finish an upload", Description: "No body, or {}." + finishNote, Response: File{}},
		{Method: http.MethodPost, Path: filesBase + "/{identifier}/download", Capability: auth.CapFileRead, Handler: s.downloadVia(envFileOptionalBody),
			OperationID: "downloadFile", Tag: tagFiles, Summary: "Download a file's content", Description: "No body, or {}." + downloadNote},
	}
	for _, rt := range routes {
		a.Handle(r, rt)
	}
	s.registerTasks(a, r)
}

// envSurface is the surface of the E/files routes.
func envSurface(c *api.Call) surface {
	return surface{Scope: c.PathScope(), By: c.Caller.Principal.ID, Origin: Origin{Kind: OriginEnvironment}}
}

// filePath is the canonical path of a file.
func filePath(sc auth.Scope, id string) string {
	return api.Prefix + "/tenants/" + sc.Tenant + "/projects/" + sc.Project + "/environments/" + sc.Environment + "/files/" + id
}

// created answers a new upload.
func created(c *api.Call, f File) error {
	return c.Respond(&api.Result{Body: f, Location: filePath(c.PathScope(), f.ID)})
}

// create serves POST E/files.
func (s *Service) create(c *api.Call) error {
	var req CreateRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	f, err := s.Create(c.Context(), envSurface(c), req)
	if err != nil {
		return err
	}
	return created(c, f)
}

// list serves GET E/files.
func (s *Service) list(c *api.Call) error {
	status, err := c.Query("status")
	if err != nil {
		return err
	}
	if status != "" && status != StatusUploading && status != StatusReady {
		return api.InvalidParameter(api.CodeValidation, "status", "status is uploading or ready")
	}
	q, err := c.PageQuery("files", map[string]string{"status": status})
	if err != nil {
		return err
	}
	ctx, rd, sc := c.Context(), s.db.Reader(), c.PathScope()
	if err := requireEnvironment(ctx, rd, sc); err != nil {
		return err
	}
	rows, err := listFiles(ctx, rd, sc.Environment, status, q.After, q.Fetch())
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, rows, func(f File) string { return f.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// remove serves DELETE E/files/{identifier}.
func (s *Service) remove(c *api.Call) error {
	id, err := c.UUIDParam("identifier", "file")
	if err != nil {
		return err
	}
	d, err := s.Delete(c.Context(), envSurface(c), id)
	if err != nil {
		return err
	}
	return c.OK(d)
}

// chunkIndex reads the index query parameter.
func chunkIndex(c *api.Call) (int64, error) {
	raw, err := c.Query("index")
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(raw, 10, 64)
	if raw == "" || perr != nil || n < 0 || (len(raw) > 1 && raw[0] == '0') {
		return 0, api.InvalidParameter(api.CodeValidation, "index", "index is the chunk's index: a whole number from 0, without leading zeros")
	}
	return n, nil
}

// checkOctets refuses a chunk body declared as anything but bytes.
func checkOctets(c *api.Call) error {
	if ct := c.R.Header.Get("Content-Type"); ct != "" && ct != "application/octet-stream" {
		return api.InvalidParameter(api.CodeValidation, "Content-Type", "a chunk's body is application/octet-stream")
	}
	return nil
}

// envFile answers the E/files surface and the path's file.
func envFile(c *api.Call) (surface, string, error) {
	id, err := c.UUIDParam("identifier", "file")
	if err != nil {
		return surface{}, "", err
	}
	return envSurface(c), id, nil
}

// envFileOptionalBody is envFile for routes with no body, or {}.
func envFileOptionalBody(c *api.Call) (surface, string, error) {
	sf, id, err := envFile(c)
	if err != nil {
		return sf, id, err
	}
	return sf, id, c.DecodeOptional(&struct{}{})
}

// serve streams the content of file id: http.ServeContent answers Range,
// If-Range and the conditional headers against the ETag, and sets
// Content-Length; the copy buffer is the only memory a download takes.
func (s *Service) serve(c *api.Call, sf surface, id string) error {
	f, content, err := s.Open(c.Context(), sf, id)
	if err != nil {
		return err
	}
	defer content.Close()
	etag := `"` + f.SHA256 + `"`
	// http.ServeContent applies If-Range to GET only; these routes are
	// POST, so a Range is dropped here unless If-Range (when sent) is the
	// ETag: a resumed download never mixes two contents.
	if ir := c.R.Header.Get("If-Range"); ir != "" && ir != etag {
		c.R.Header.Del("Range")
	}
	h := c.W.Header()
	h.Set("ETag", etag)
	h.Set("Content-Type", f.MediaType)
	h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(f.Name))
	h.Set("X-Content-Type-Options", "nosniff")
	var mod time.Time
	if f.FinishedAt != nil {
		mod = *f.FinishedAt
	}
	http.ServeContent(c.W, c.R, "", mod, content)
	return nil
}
