package sim

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Editor host limits (docs/platform-api.md, "Editor host").
const (
	StudioSessions = 4
	StudioWork     = 30 * time.Second
)

// studio is the editor host's state: open sessions in memory (the editor
// host is offline and per machine: nothing is stored), each with its
// program, owner and live subscribers.
type studio struct {
	svc      *Service
	sessions int
	work     time.Duration

	mu   sync.Mutex
	open map[string]*studioSession
}

type studioSession struct {
	mu    sync.Mutex // held while a command works
	busy  bool
	s     *Session
	p     *Program
	owner string
	subs  map[chan SessionBody]bool
}

func newStudio(s *Service) *studio {
	st := &studio{svc: s, sessions: s.lim.StudioSessions, work: s.lim.StudioWork, open: map[string]*studioSession{}}
	if st.sessions <= 0 {
		st.sessions = StudioSessions
	}
	if st.work <= 0 {
		st.work = StudioWork
	}
	return st
}

// StudioCreate is the body of POST /studio/local/debug/sessions: a
// simulation request without target (camelCase).
type StudioCreate struct {
	Source
	Mocks json.RawMessage `json:"mocks,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	Now   *string         `json:"now,omitempty"`
}

// within runs fn under the editor host's work limit: PF-STUDIO-BUSY when
// it takes longer (its result is dropped; the work is bounded by the
// simulation limits, so it ends on its own).
func (st *studio) within(ctx context.Context, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, st.work)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return refuse(CodeStudioBusy, "", "the work took longer than %s", st.work)
	}
}

// expire forgets sessions past their lifetime.
func (st *studio) expire(now time.Time) {
	for id, ss := range st.open {
		if !now.Before(ss.s.ExpiresAt) {
			delete(st.open, id)
			ss.closeSubs()
		}
	}
}

func (ss *studioSession) closeSubs() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for ch := range ss.subs {
		close(ch)
	}
	ss.subs = map[chan SessionBody]bool{}
}

// create opens a session for owner.
func (st *studio) create(ctx context.Context, owner string, req StudioCreate) (*Session, error) {
	var out *Session
	err := st.within(ctx, func() error {
		p, _, sum, err := st.build(ctx, req.Source)
		if err != nil {
			return err
		}
		if p == nil {
			return &compileError{err: refuse(CodeStudioReq, "/source", "the workflow does not compile"), summary: sum}
		}
		ms, err := DecodeMocks(req.Mocks, "/mocks")
		if err != nil {
			return err
		}
		if err := p.checkMocks(ms, "/mocks", true); err != nil {
			return err
		}
		now := st.svc.clock()
		start := now
		if req.Now != nil {
			t, err := time.Parse(time.RFC3339Nano, *req.Now)
			if err != nil {
				return refuse(CodeStudioReq, "/now", "now must be an RFC 3339 time with a time zone")
			}
			start = t
		}
		input := req.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		s := &Session{ID: st.svc.newID(), Creator: owner, Revision: 1, CreatedAt: now, ExpiresAt: now.Add(st.svc.lim.Lifetime),
			Mocks: ms, Input: input, Start: start}
		if err := Begin(p, s); err != nil {
			if e, ok := err.(*Error); ok && e.Code == CodeRequest {
				e.Code = CodeStudioReq
			}
			return err
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		st.expire(now)
		if len(st.open) >= st.sessions {
			return refuse(CodeStudioFull, "", "the editor host has %d open sessions (the limit); close one", len(st.open))
		}
		st.open[s.ID] = &studioSession{s: s, p: p, owner: owner, subs: map[chan SessionBody]bool{}}
		out = clone(s)
		return nil
	})
	if err != nil {
		// After a timeout fn may still be writing out: only a finished
		// fn's result (sent through within's channel) may be read.
		return nil, err
	}
	return out, nil
}

// compileError is a refused creation with the compile summary.
type compileError struct {
	err     *Error
	summary CompileSummary
}

func (e *compileError) Error() string { return e.err.Error() }
func (e *compileError) Unwrap() error { return e.err }

// session answers an open session of owner.
func (st *studio) session(owner, id string) (*studioSession, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.expire(st.svc.clock())
	ss, ok := st.open[id]
	if !ok || ss.owner != owner {
		return nil, refuse(CodeNotFound, "", "no open editor host session with that id")
	}
	return ss, nil
}

func (st *studio) get(owner, id string) (*Session, error) {
	ss, err := st.session(owner, id)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return clone(ss.s), nil
}

// close ends a session and its live channels.
func (st *studio) close(owner, id string) error {
	ss, err := st.session(owner, id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	delete(st.open, id)
	st.mu.Unlock()
	ss.closeSubs()
	return nil
}

// command applies c at revision rev: one command at a time per session
// (PF-STUDIO-BUSY while another works), within the work limit; every
// subscriber gets the new session.
func (st *studio) command(ctx context.Context, owner, id string, rev int64, c Command, running func()) (*Session, error) {
	ss, err := st.session(owner, id)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	if ss.busy {
		ss.mu.Unlock()
		return nil, refuse(CodeStudioBusy, "", "another command is working on this session")
	}
	if ss.s.Revision != rev {
		cur := ss.s.Revision
		ss.mu.Unlock()
		return nil, refuse(CodeRevision, "", "the session is at revision %d, not %d", cur, rev)
	}
	ss.busy = true
	work := clone(ss.s)
	ss.mu.Unlock()
	if running != nil {
		running()
	}
	err = st.within(ctx, func() error {
		if err := Apply(ss.p, work, c, st.svc.lim); err != nil {
			return err
		}
		work.Revision++
		return nil
	})
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.busy = false
	if err != nil {
		return nil, err
	}
	ss.s = work
	body := work.Body()
	for ch := range ss.subs {
		select {
		case ch <- body:
		default: // a slow panel misses a view; the next one is complete
		}
	}
	return clone(work), nil
}

// subscribe registers a live channel for the session's views.
func (st *studio) subscribe(owner, id string) (chan SessionBody, func(), error) {
	ss, err := st.session(owner, id)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan SessionBody, 16)
	ss.mu.Lock()
	ss.subs[ch] = true
	ss.mu.Unlock()
	return ch, func() {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		if ss.subs[ch] {
			delete(ss.subs, ch)
			close(ch)
		}
	}, nil
}
