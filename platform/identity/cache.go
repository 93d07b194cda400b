package identity

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// accessCache keeps, per linked sign-in, the principal and its current
// grants (and its rendered identity view). Every committed change to
// principals, grants, tenants, projects or environments bumps the
// generation before the changing request answers (store.WriteThen), and an
// entry is used only while its generation is current; so a disabled
// principal or a revoked grant applies on the very next request whatever
// the token's expiry, while unchanged access costs no database read.
//
// An entry records the generation read before its rows were loaded: a
// change committed meanwhile makes it stale at once, never the reverse.
// All access changes go through this process (the CLI uses the API), which
// is what makes an in-process generation sufficient.
type accessCache struct {
	gen atomic.Uint64
	max int

	mu        sync.RWMutex
	bySubject map[subjectKey]*accessEntry
}

type subjectKey struct{ issuer, subject string }

// accessEntry is immutable once stored, except for the identity view,
// which is filled at most once per entry.
type accessEntry struct {
	gen       uint64
	found     bool
	principal Principal
	grants    []auth.Grant
	views     []Grant
	identity  atomic.Pointer[[]byte]
}

func newAccessCache(max int) *accessCache {
	return &accessCache{max: max, bySubject: make(map[subjectKey]*accessEntry)}
}

// invalidate makes every entry stale.
func (c *accessCache) invalidate() { c.gen.Add(1) }

// lookup returns the current entry of (issuer, subject), loading it with
// load on a miss.
func (c *accessCache) lookup(ctx context.Context, k subjectKey, load func(ctx context.Context) (*accessEntry, error)) (*accessEntry, error) {
	gen := c.gen.Load()
	c.mu.RLock()
	e := c.bySubject[k]
	c.mu.RUnlock()
	if e != nil && e.gen == gen {
		return e, nil
	}
	e, err := load(ctx)
	if err != nil {
		return nil, err
	}
	e.gen = gen
	c.mu.Lock()
	if len(c.bySubject) >= c.max {
		clear(c.bySubject) // bounded: start over rather than track recency
	}
	c.bySubject[k] = e
	c.mu.Unlock()
	return e, nil
}

// loadEntry reads a sign-in's principal and current grants.
func loadEntry(ctx context.Context, q store.Querier, k subjectKey) (*accessEntry, error) {
	p, err := principalBySubject(ctx, q, k.issuer, k.subject)
	if errors.Is(err, errNoRow) {
		return &accessEntry{}, nil
	}
	if err != nil {
		return nil, err
	}
	stored, err := currentGrants(ctx, q, p.ID)
	if err != nil {
		return nil, err
	}
	e := &accessEntry{found: true, principal: p, grants: make([]auth.Grant, len(stored)), views: make([]Grant, len(stored))}
	for i, g := range stored {
		e.grants[i] = g.Grant
		e.views[i] = g.view(auth.PrincipalKind(p.Kind))
	}
	return e, nil
}
