package sim

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/lang"
	"github.com/agentbridge/bridge/store"
)

// Options configures New.
type Options struct {
	DB     *store.DB
	Logger *slog.Logger
	// Now is the server clock (time.Now): session lifetimes and the
	// default virtual start.
	Now func() time.Time
	// NewID makes session ids (a random UUID when nil).
	NewID func() string
	// Limits default to DefaultLimits.
	Limits *Limits
}

// Service serves debug sessions, the editor host and editor documents.
type Service struct {
	db    *store.DB
	log   *slog.Logger
	now   func() time.Time
	newID func() string
	lim   Limits

	// programs caches loaded programs by session id (a session's program
	// never changes).
	mu       sync.Mutex
	programs map[string]*Program

	studio *studio
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.DB == nil {
		return nil, errors.New("sim: Options.DB is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = func() string { return uuid.NewString() }
	}
	lim := DefaultLimits()
	if o.Limits != nil {
		lim = *o.Limits
	}
	s := &Service{db: o.DB, log: o.Logger, now: o.Now, newID: o.NewID, lim: lim, programs: map[string]*Program{}}
	s.studio = newStudio(s)
	return s, nil
}

// CreateRequest is the body of POST P/debug/sessions.
type CreateRequest struct {
	Artifact json.RawMessage `json:"artifact"`
	Mocks    json.RawMessage `json:"mocks,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
	// Now is the virtual start (RFC 3339 with a time zone; default the
	// server's clock).
	Now *string `json:"now,omitempty"`
}

// SessionBody is a session as the routes answer it.
type SessionBody struct {
	ID        string    `json:"id"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	View      View      `json:"view"`
}

// Body is the session's answer.
func (s *Session) Body() SessionBody {
	return SessionBody{ID: s.ID, Revision: s.Revision, CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt, View: s.View()}
}

// Scope names a session's project and owner.
type Scope struct {
	Tenant, Project, Principal string
}

// maxCachedPrograms bounds the program cache (cleared when full).
const maxCachedPrograms = 256

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// Create starts a session in the project: the artifact's references are
// resolved against the project's published versions, the mocks and input
// checked, the run started (paused before its first node) and the session
// stored within the capacity limits.
func (s *Service) Create(ctx context.Context, sc Scope, req CreateRequest) (*Session, error) {
	if ok, err := projectExists(ctx, s.db.Reader(), sc.Tenant, sc.Project); err != nil {
		return nil, err
	} else if !ok {
		return nil, refuse(CodeNotFound, "", "no project with that id in the tenant")
	}
	now := s.clock()
	start := now
	if req.Now != nil {
		t, err := time.Parse(time.RFC3339Nano, *req.Now)
		if err != nil {
			return nil, refuse(CodeRequest, "/now", "now must be an RFC 3339 time with a time zone")
		}
		start = t
	}
	if len(req.Artifact) == 0 || string(req.Artifact) == "null" {
		return nil, refuse(CodeRequest, "/artifact", "a compiled workflow artifact is required")
	}
	lock, defs, err := s.resolve(ctx, sc.Project, req.Artifact)
	if err != nil {
		return nil, err
	}
	p, err := LoadProgram(req.Artifact, lock, defs)
	if err != nil {
		return nil, err
	}
	ms, err := DecodeMocks(req.Mocks, "/mocks")
	if err != nil {
		return nil, err
	}
	if err := p.checkMocks(ms, "/mocks", false); err != nil {
		return nil, err
	}
	lockRaw, err := json.Marshal(lock)
	if err != nil {
		return nil, fmt.Errorf("sim: encode lock: %w", err)
	}
	input := req.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	sess := &Session{ID: s.newID(), Tenant: sc.Tenant, Project: sc.Project, Creator: sc.Principal, Revision: 1,
		CreatedAt: now, ExpiresAt: now.Add(s.lim.Lifetime), Artifact: req.Artifact, Lock: lockRaw, Definitions: defs,
		Mocks: ms, Input: input, Start: start}
	if err := Begin(p, sess); err != nil {
		return nil, err
	}
	row, err := s.encode(sess)
	if err != nil {
		return nil, err
	}
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := pruneSessions(ctx, tx, sc.Project, now.Add(-s.lim.Retention)); err != nil {
			return err
		}
		byCreator, byProject, retained, err := capacity(ctx, tx, sc.Principal, sc.Project, now)
		if err != nil {
			return err
		}
		switch {
		case byCreator >= s.lim.LivePerCreator:
			return refuse(CodeCapacity, "", "you have %d live debug sessions (the limit)", byCreator)
		case byProject >= s.lim.LivePerProject:
			return refuse(CodeCapacity, "", "the project has %d live debug sessions (the limit)", byProject)
		case retained >= s.lim.RetainedPerProject:
			return refuse(CodeCapacity, "", "the project keeps %d debug sessions (the limit)", retained)
		}
		return insertSession(ctx, tx, row)
	})
	if err != nil {
		return nil, err
	}
	s.remember(sess.ID, p)
	return sess, nil
}

// resolve builds the catalog lock and definition artifacts of the
// artifact's references from the project's published versions.
func (s *Service) resolve(ctx context.Context, project string, artifact []byte) (*lang.CatalogLock, [][]byte, error) {
	refs, err := References(artifact)
	if err != nil {
		return nil, nil, err
	}
	lock := &lang.CatalogLock{Definitions: []lang.CatalogEntry{}, Tasks: []lang.CatalogTask{}, Adapters: []lang.CatalogAdapter{}, Schemas: []lang.CatalogSchema{}}
	var defs [][]byte
	for _, r := range refs {
		if r.PublishedVersionID == "" {
			return nil, nil, refuse(CodeRequest, "/artifact/references/"+escape(r.Key), "the reference %s is not resolved: compile against the project's catalog", r.Key)
		}
		v, err := catalog.PublishedVersion(ctx, s.db.Reader(), project, r.PublishedVersionID)
		if errors.Is(err, catalog.ErrVersionNotFound) {
			return nil, nil, refuse(CodeRequest, "/artifact/references/"+escape(r.Key), "the reference %s is not published in this project", r.Key)
		}
		if err != nil {
			return nil, nil, err
		}
		var f struct {
			Input      json.RawMessage `json:"input"`
			Output     json.RawMessage `json:"output"`
			SideEffect string          `json:"sideEffect"`
		}
		if err := json.Unmarshal(v.Artifact, &f); err != nil {
			return nil, nil, fmt.Errorf("sim: reference %s: %w", r.Key, err)
		}
		lock.Definitions = append(lock.Definitions, lang.CatalogEntry{Kind: v.Kind, ID: v.DefinitionID, Version: v.Version,
			PublishedVersionID: v.ID, Digest: v.Digest, InputSchema: nonNull(f.Input), OutputSchema: nonNull(f.Output), SideEffect: f.SideEffect})
		if v.Kind == lang.KindAction || v.Kind == lang.KindDecisionTable {
			defs = append(defs, v.Artifact)
		}
	}
	return lock, defs, nil
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// encode serializes a session within the session size limit.
func (s *Service) encode(sess *Session) (sessionRow, error) {
	body, err := json.Marshal(sess)
	if err != nil {
		return sessionRow{}, fmt.Errorf("sim: encode session: %w", err)
	}
	if len(body) > s.lim.SessionBytes {
		return sessionRow{}, refuse(CodeLimit, "", "the session would take %d bytes serialized, over the limit of %d", len(body), s.lim.SessionBytes)
	}
	return sessionRow{ID: sess.ID, Tenant: sess.Tenant, Project: sess.Project, Creator: sess.Creator, Revision: sess.Revision,
		Status: sess.Status, CreatedAt: sess.CreatedAt, ExpiresAt: sess.ExpiresAt, Body: body}, nil
}

// Get reads a session of its creator: others, and other projects, get
// PF-NOT-FOUND; an expired one PF-DEBUG-EXPIRED.
func (s *Service) Get(ctx context.Context, sc Scope, id string) (*Session, error) {
	row, err := readSession(ctx, s.db.Reader(), id)
	if errors.Is(err, errNoSession) || (err == nil && (row.Project != sc.Project || row.Tenant != sc.Tenant || row.Creator != sc.Principal)) {
		return nil, refuse(CodeNotFound, "", "no debug session with that id in this project")
	}
	if err != nil {
		return nil, err
	}
	if !s.clock().Before(row.ExpiresAt) {
		return nil, refuse(CodeExpired, "", "the debug session expired at %s", row.ExpiresAt.Format(time.RFC3339))
	}
	var sess Session
	if err := json.Unmarshal(row.Body, &sess); err != nil {
		return nil, fmt.Errorf("sim: decode session %s: %w", id, err)
	}
	return &sess, nil
}

// Command applies one command to the session at revision ifMatch and
// stores the result with the next revision.
func (s *Service) Command(ctx context.Context, sc Scope, id string, ifMatch int64, c Command) (*Session, error) {
	sess, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if sess.Revision != ifMatch {
		return nil, refuse(CodeRevision, "", "the session is at revision %d, not %d", sess.Revision, ifMatch)
	}
	p, err := s.program(sess)
	if err != nil {
		return nil, err
	}
	if err := Apply(p, sess, c, s.lim); err != nil {
		return nil, err
	}
	prev := sess.Revision
	sess.Revision++
	row, err := s.encode(sess)
	if err != nil {
		return nil, err
	}
	var stale bool
	if err := s.db.Write(ctx, func(tx *sql.Tx) error {
		ok, err := updateSession(ctx, tx, row, prev)
		stale = !ok
		return err
	}); err != nil {
		return nil, err
	}
	if stale {
		return nil, refuse(CodeRevision, "", "the session changed while the command ran")
	}
	return sess, nil
}

// program answers the session's loaded program.
func (s *Service) program(sess *Session) (*Program, error) {
	s.mu.Lock()
	p, ok := s.programs[sess.ID]
	s.mu.Unlock()
	if ok {
		return p, nil
	}
	var lock *lang.CatalogLock
	if len(sess.Lock) > 0 && !strings.EqualFold(string(sess.Lock), "null") {
		lock = &lang.CatalogLock{}
		if err := json.Unmarshal(sess.Lock, lock); err != nil {
			return nil, fmt.Errorf("sim: session %s: lock: %w", sess.ID, err)
		}
	}
	p, err := LoadProgram(sess.Artifact, lock, sess.Definitions)
	if err != nil {
		return nil, fmt.Errorf("sim: session %s: %w", sess.ID, err)
	}
	s.remember(sess.ID, p)
	return p, nil
}

func (s *Service) remember(id string, p *Program) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.programs) >= maxCachedPrograms {
		clear(s.programs)
	}
	s.programs[id] = p
}
