package file

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// Tasks is what the task routes need of the run engine
// (engine.Service implements it).
type Tasks interface {
	// HumanTask answers the run of human task id of env. With act, only
	// when principal may act on it now (complete it: 409 PF-RUNTIME-STATE
	// otherwise); 404 when env has no such task.
	HumanTask(ctx context.Context, env, id, principal string, act bool) (run string, err error)
	// LeasedTask answers the run of worker task id of env when it is
	// leased to worker and principal (404, else 409 PF-RUNTIME-STATE).
	LeasedTask(ctx context.Context, env, id, worker, principal string) (run string, err error)
}

// Options configures New.
type Options struct {
	DB *store.DB
	// Dir holds the bytes (the data directory's files/).
	Dir    string
	Limits Limits
	Tasks  Tasks
	Logger *slog.Logger
	// Now is the clock (time.Now); the sweeper reads it too.
	Now func() time.Time
	// NewID makes file ids (a time-ordered random UUID when nil).
	NewID func() string
}

// Service serves files.
type Service struct {
	db     *store.DB
	blobs  blobs
	limits Limits
	tasks  Tasks
	log    *slog.Logger
	now    func() time.Time
	newID  func() string

	locks keyLocks
	// blobMu orders a blob's creation (finish) against its removal
	// (deletion, reclamation), which decide from the rows.
	blobMu sync.Mutex

	sweepMu   sync.Mutex
	nextSweep time.Time
}

// New builds the service and creates its directories.
func New(o Options) (*Service, error) {
	if o.DB == nil || o.Dir == "" || o.Tasks == nil {
		return nil, errors.New("file: Options.DB, Dir and Tasks are required")
	}
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	s := &Service{db: o.DB, blobs: blobs{root: o.Dir}, limits: o.Limits, tasks: o.Tasks, log: o.Logger, now: o.Now, newID: o.NewID}
	if err := s.blobs.init(); err != nil {
		return nil, err
	}
	return s, nil
}

// Limits answers the service's limits.
func (s *Service) Limits() Limits { return s.limits }

// timestamp is the clock's time at the stored precision (milliseconds).
func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// surface is what one request may touch: its environment and caller,
// and, through a task's routes, the task (Origin) and its run.
type surface struct {
	Scope auth.Scope
	By    string
	// Origin is the creator of new files and the only one that continues
	// their uploads (kind environment for E/files).
	Origin Origin
}

// viaTask reports whether the request came through a task's routes.
func (sf surface) viaTask() bool { return sf.Origin.Kind != OriginEnvironment }

// ownsUpload reports whether the surface continues the upload of r.
func (sf surface) ownsUpload(r row) bool {
	return r.Origin.Kind == sf.Origin.Kind && r.Origin.ID == sf.Origin.ID
}

// Create starts an upload.
func (s *Service) Create(ctx context.Context, sf surface, req CreateRequest) (File, error) {
	if err := checkCreate(&req, s.limits); err != nil {
		return File{}, err
	}
	now := s.timestamp()
	expires := now.Add(s.limits.UploadTTL)
	r := row{File: File{ID: s.newID(), EnvironmentID: sf.Scope.Environment, Name: req.Name, MediaType: req.MediaType, Size: req.Size,
		SHA256: req.SHA256, Status: StatusUploading, ChunkSize: req.ChunkSize, Chunks: chunks(req.Size, req.ChunkSize),
		Origin: sf.Origin, CreatedBy: sf.By, CreatedAt: now, UpdatedAt: now, ExpiresAt: &expires},
		Tenant: sf.Scope.Tenant, Project: sf.Scope.Project}
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := requireEnvironment(ctx, tx, sf.Scope); err != nil {
			return err
		}
		n, total, err := usage(ctx, tx, sf.Scope.Environment)
		if err != nil {
			return err
		}
		if n >= s.limits.MaxFiles {
			return capacity("the environment holds %d files, the most it may (platform.files.max-files); delete some first", n)
		}
		if total+req.Size > s.limits.MaxTotalBytes {
			return capacity("the environment's files would take %d bytes, more than its %d (platform.files.max-total-bytes); delete some first",
				total+req.Size, s.limits.MaxTotalBytes)
		}
		return insertFile(ctx, tx, r)
	})
	if err != nil {
		return File{}, err
	}
	return r.File, nil
}

// requireEnvironment answers 404 unless the scope's environment exists.
func requireEnvironment(ctx context.Context, q store.Querier, sc auth.Scope) error {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_environments WHERE id = ? AND project_id = ? AND tenant_id = ?`,
		sc.Environment, sc.Project, sc.Tenant).Scan(&n)
	if err != nil {
		return fmt.Errorf("file: read environment: %w", err)
	}
	if n == 0 {
		return api.NotFound("environment")
	}
	return nil
}

// upload reads the upload id the surface continues: 404 when the
// environment has no such file, or another surface created it.
func (s *Service) upload(ctx context.Context, sf surface, id string) (row, error) {
	if err := requireEnvironment(ctx, s.db.Reader(), sf.Scope); err != nil {
		return row{}, err
	}
	r, err := getFile(ctx, s.db.Reader(), sf.Scope.Environment, id)
	if errors.Is(err, errNotFound) || (err == nil && (r.Status == statusDeleted || !sf.ownsUpload(r))) {
		return r, api.NotFound("file")
	}
	return r, err
}

// checkUploading answers 409 PF-FILE-STATE for a finished or expired
// upload.
func (s *Service) checkUploading(r row) error {
	if r.Status != StatusUploading {
		return stateConflict("file %s is finished: its chunks cannot change", r.ID)
	}
	if r.ExpiresAt != nil && !s.now().Before(*r.ExpiresAt) {
		return stateConflict("the upload of file %s expired at %s and is being reclaimed; create the file again", r.ID,
			r.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// Chunk stores chunk index of upload id from body: the next chunk is
// written and counted; an earlier one is compared (same bytes: nothing
// changes; other bytes: 409 PF-FILE-CHUNK-CONFLICT); a later one is 409
// PF-FILE-CHUNK-ORDER.
func (s *Service) Chunk(ctx context.Context, sf surface, id string, index int64, body io.Reader) (File, error) {
	unlock := s.locks.lock(id)
	defer unlock()
	r, err := s.upload(ctx, sf, id)
	if err != nil {
		return File{}, err
	}
	if err := s.checkUploading(r); err != nil {
		return File{}, err
	}
	if index < 0 || index >= r.Chunks {
		return File{}, api.InvalidParameter(api.CodeValidation, "index", "index is 0 to %d: the file has %d chunks", r.Chunks-1, r.Chunks)
	}
	n := chunkLen(r.Size, r.ChunkSize, index)
	off := index * r.ChunkSize
	switch {
	case index > r.ReceivedChunks:
		return File{}, api.Conflict(CodeChunkOrder, "chunks arrive in order: the next chunk of file %s is %d, not %d", id, r.ReceivedChunks, index)
	case index < r.ReceivedChunks:
		same, err := s.blobs.sameChunk(id, off, n, body)
		if errors.Is(err, errPartMissing) {
			return File{}, s.lost(ctx, r)
		}
		if err != nil {
			return File{}, bodyProblem(err, index, n)
		}
		if !same {
			return File{}, api.Conflict(CodeChunkConflict, "chunk %d of file %s is stored with other bytes; a chunk never changes", index, id)
		}
		return r.File, nil
	}
	if err := s.blobs.writeChunk(id, off, n, body); err != nil {
		return File{}, bodyProblem(err, index, n)
	}
	now := s.timestamp()
	expires := now.Add(s.limits.UploadTTL)
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		ok, err := countChunk(ctx, tx, id, index, now, expires)
		if err == nil && !ok {
			err = stateConflict("file %s changed meanwhile; read it again", id)
		}
		return err
	})
	if err != nil {
		return File{}, err
	}
	r.ReceivedChunks, r.UpdatedAt, r.ExpiresAt = index+1, now, &expires
	r.ReceivedBytes = min(r.ReceivedChunks*r.ChunkSize, r.Size)
	return r.File, nil
}

// bodyProblem turns a chunk body of the wrong length into 422
// PF-VALIDATION; other errors (a body over the route's limit: 413) pass.
func bodyProblem(err error, index, n int64) error {
	if errors.Is(err, errShortChunk) || errors.Is(err, errLongChunk) {
		msg := fmt.Sprintf("chunk %d has exactly %d bytes", index, n)
		return &api.Error{Code: api.CodeValidation, Message: msg,
			Diagnostics: []api.Diagnostic{{Code: "chunk_length", Message: msg}}}
	}
	return err
}

// lost forgets the chunks of an upload whose bytes are gone (the data
// directory was changed behind the daemon's back): the client sends them
// again from 0.
func (s *Service) lost(ctx context.Context, r row) error {
	s.log.Warn("file: the bytes of an upload are missing; its chunks are sent again", "file_id", r.ID)
	if err := s.db.Write(ctx, func(tx *sql.Tx) error { return resetChunks(ctx, tx, r.ID, s.timestamp()) }); err != nil {
		return err
	}
	return api.Conflict(CodeIncomplete, "the stored chunks of file %s are lost; send them again from index 0", r.ID)
}

// Finish verifies upload id and makes it visible. Finishing a ready file
// answers it unchanged.
func (s *Service) Finish(ctx context.Context, sf surface, id string) (File, error) {
	unlock := s.locks.lock(id)
	defer unlock()
	r, err := s.upload(ctx, sf, id)
	if err != nil {
		return File{}, err
	}
	if r.Status == StatusReady {
		return r.File, nil
	}
	if err := s.checkUploading(r); err != nil {
		return File{}, err
	}
	if r.ReceivedChunks < r.Chunks {
		return File{}, api.Conflict(CodeIncomplete, "file %s has %d of its %d chunks; send chunk %d next", id, r.ReceivedChunks, r.Chunks, r.ReceivedChunks)
	}
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	switch err := s.blobs.promote(id, r.SHA256, r.Size); {
	case errors.Is(err, errDigest):
		// The chunks are immutable, so this upload can never finish:
		// it is discarded.
		if err := s.discard(ctx, r); err != nil {
			return File{}, err
		}
		return File{}, &api.Error{Code: CodeDigest,
			Message: fmt.Sprintf("the %d bytes received do not have the declared SHA-256 %s; the upload is discarded, create the file again", r.Size, r.SHA256)}
	case errors.Is(err, errPartMissing):
		return File{}, s.lost(ctx, r)
	case err != nil:
		return File{}, err
	}
	now := s.timestamp()
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		ok, err := markReady(ctx, tx, id, now)
		if err == nil && !ok {
			err = stateConflict("file %s changed meanwhile; read it again", id)
		}
		return err
	})
	if err != nil {
		return File{}, err
	}
	r.Status, r.FinishedAt, r.UpdatedAt, r.ExpiresAt = StatusReady, &now, now, nil
	return r.File, nil
}

// discard removes an upload: its row, then its bytes (a crash between
// leaves a part without a row, which Recover removes).
func (s *Service) discard(ctx context.Context, r row) error {
	if err := s.db.Write(ctx, func(tx *sql.Tx) error { return deleteFile(ctx, tx, r.ID) }); err != nil {
		return err
	}
	return s.blobs.removePart(r.ID)
}

// visible reads file id as the surface may see it: through E/files a file
// that is uploading or ready; through a task's routes a file of the
// task's run (created through one of its tasks, or referred to by its
// values, kept after a deletion while the run lives) or an upload of the
// task itself.
func (s *Service) visible(ctx context.Context, sf surface, id string) (row, error) {
	rd := s.db.Reader()
	if err := requireEnvironment(ctx, rd, sf.Scope); err != nil {
		return row{}, err
	}
	r, err := getFile(ctx, rd, sf.Scope.Environment, id)
	if errors.Is(err, errNotFound) {
		return r, api.NotFound("file")
	}
	if err != nil {
		return r, err
	}
	if !sf.viaTask() {
		if r.Status == statusDeleted {
			return r, api.NotFound("file")
		}
		return r, nil
	}
	if sf.ownsUpload(r) || (r.Status != StatusUploading && r.Origin.RunID == sf.Origin.RunID) {
		return r, nil
	}
	if r.Status != StatusUploading {
		ok, err := referenced(ctx, rd, id, sf.Origin.RunID)
		if err != nil {
			return r, err
		}
		if ok {
			return r, nil
		}
	}
	return r, api.NotFound("file")
}

// Get reads file id.
func (s *Service) Get(ctx context.Context, sf surface, id string) (File, error) {
	r, err := s.visible(ctx, sf, id)
	return r.File, err
}

// Open opens the content of ready file id for a download.
func (s *Service) Open(ctx context.Context, sf surface, id string) (File, *os.File, error) {
	r, err := s.visible(ctx, sf, id)
	if err != nil {
		return File{}, nil, err
	}
	if r.Status == StatusUploading {
		return File{}, nil, stateConflict("file %s is still uploading (%d of %d chunks); finish it first", id, r.ReceivedChunks, r.Chunks)
	}
	f, err := s.blobs.open(r.SHA256)
	if errors.Is(err, os.ErrNotExist) {
		// deleted and reclaimed between the read and the open
		return File{}, nil, api.NotFound("file")
	}
	if err != nil {
		return File{}, nil, fmt.Errorf("file: open content: %w", err)
	}
	return r.File, f, nil
}

// Deletion is the answer of DELETE E/files/{identifier}.
type Deletion struct {
	ID string `json:"id" format:"uuid"`
	// RetainedForRuns counts the runs that have not ended and refer to
	// the file: it is kept (hidden) until they end.
	RetainedForRuns int `json:"retained_for_runs" doc:"runs that refer to the file and have not ended: its content is kept for them (hidden from these routes) until they end; 0 when it is gone"`
}

// Delete removes file id: an upload is abandoned, a ready file removed
// at once, or hidden and kept while runs that refer to it live.
func (s *Service) Delete(ctx context.Context, sf surface, id string) (Deletion, error) {
	unlock := s.locks.lock(id)
	defer unlock()
	r, err := s.visible(ctx, sf, id)
	if err != nil {
		return Deletion{}, err
	}
	if r.Status == StatusUploading {
		return Deletion{ID: id}, s.discard(ctx, r)
	}
	var live int
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		if live, err = liveRefs(ctx, tx, id); err != nil {
			return err
		}
		if live > 0 {
			return markDeleted(ctx, tx, id, sf.By, s.timestamp())
		}
		return deleteFile(ctx, tx, id)
	})
	if err != nil {
		return Deletion{}, err
	}
	if live == 0 {
		if err := s.releaseBlob(ctx, r.SHA256); err != nil {
			return Deletion{}, err
		}
	}
	return Deletion{ID: id, RetainedForRuns: live}, nil
}

// releaseBlob removes the blob of digest when no row needs it.
func (s *Service) releaseBlob(ctx context.Context, digest string) error {
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	used, err := blobInUse(ctx, s.db.Reader(), digest)
	if err != nil || used {
		return err
	}
	return s.blobs.removeBlob(digest)
}

// Recover removes what a crash can leave in the files directory: stray
// temporary entries, parts of uploads that no longer exist (or finished),
// and blobs no row names. It runs once at start, before any request.
func (s *Service) Recover(ctx context.Context) error {
	ids, stray, err := s.blobs.parts()
	if err != nil {
		return err
	}
	removed := 0
	for _, p := range stray {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("file: remove %s: %w", filepath.Base(p), err)
		}
		removed++
	}
	rd := s.db.Reader()
	for _, id := range ids {
		status, _, err := uploadStatus(ctx, rd, id)
		if err != nil {
			return err
		}
		if status != StatusUploading {
			if err := s.blobs.removePart(id); err != nil {
				return err
			}
			removed++
		}
	}
	digests, err := s.blobs.digests()
	if err != nil {
		return err
	}
	for _, d := range digests {
		used, err := blobInUse(ctx, rd, d)
		if err != nil {
			return err
		}
		if !used {
			if err := s.blobs.removeBlob(d); err != nil {
				return err
			}
			removed++
		}
	}
	if removed > 0 {
		s.log.Info("file: removed what an interrupted operation left behind", "entries", removed)
	}
	return nil
}

// keyLocks serializes the operations on one file.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks key and answers its unlock.
func (k *keyLocks) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
