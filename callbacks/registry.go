package callbacks

import (
	"sort"
	"sync"
	"time"
)

// registry is the in-memory view of the tables the hot path reads: the
// allow-list, configurations (with opened secrets) and subscriptions. The
// database is the source of truth; every change reloads the affected rows
// after it is committed.
type registry struct {
	mu      sync.RWMutex
	domains []AuthorizedDomain
	configs map[string]*Configuration
	subs    []EventSubscription
}

func newRegistry() *registry {
	return &registry{configs: map[string]*Configuration{}}
}

func (r *registry) setDomains(ds []AuthorizedDomain) {
	r.mu.Lock()
	r.domains = ds
	r.mu.Unlock()
}

func (r *registry) setConfigs(cs []Configuration) {
	m := make(map[string]*Configuration, len(cs))
	for i := range cs {
		c := cs[i]
		m[c.ID] = &c
	}
	r.mu.Lock()
	r.configs = m
	r.mu.Unlock()
}

// putConfig replaces a configuration. Stored values are never mutated, so
// a dispatcher holding the old pointer keeps a consistent snapshot.
func (r *registry) putConfig(c Configuration) {
	r.mu.Lock()
	r.configs[c.ID] = &c
	r.mu.Unlock()
}

func (r *registry) deleteConfig(id string) {
	r.mu.Lock()
	delete(r.configs, id)
	r.mu.Unlock()
}

func (r *registry) setSubs(subs []EventSubscription) {
	sort.Slice(subs, func(i, j int) bool { return subs[i].ID < subs[j].ID })
	r.mu.Lock()
	r.subs = subs
	r.mu.Unlock()
}

func (r *registry) config(id string) *Configuration {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.configs[id]
}

func (r *registry) hostAuthorized(host string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return hostAuthorized(r.domains, host)
}

// deliverable returns the configuration a due attempt may be made to, or the
// code and message of why the attempt is cancelled instead.
func (r *registry) deliverable(id string) (*Configuration, *ExecutionError) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c := r.configs[id]
	switch {
	case c == nil:
		return nil, &ExecutionError{Code: ErrCodeDeleted, Message: "the configuration was deleted"}
	case c.Status != StatusActive:
		msg := "the configuration is " + c.Status
		if c.StatusReason != "" {
			msg += ": " + c.StatusReason
		}
		return nil, &ExecutionError{Code: ErrCodeInactive, Message: msg}
	case !hostAuthorized(r.domains, c.host):
		return nil, &ExecutionError{Code: ErrCodeDomain, Message: "the domain " + c.host + " is no longer authorized"}
	}
	return c, nil
}

// matching returns the active configurations subscribed to eventType.
func (r *registry) matching(eventType string) []*Configuration {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*Configuration
	for _, c := range r.configs {
		if c.Status == StatusActive && matchAny(c.SubscribedEventTypes, eventType) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// acceptingSub returns the first subscription of group that accepts the message.
func (r *registry) acceptingSub(s *Settings, group, topic string, ts time.Time, eventType string) (EventSubscription, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, sub := range r.subs {
		if sub.ConsumerGroupID == group && sub.accepts(s, topic, ts, eventType) {
			return sub, true
		}
	}
	return EventSubscription{}, false
}

// groups returns, per consumer group, the topic patterns of its active subscriptions.
func (r *registry) groups(s *Settings) map[string][]string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := map[string][]string{}
	for _, sub := range r.subs {
		if !sub.Active {
			continue
		}
		for _, t := range sub.topics(s) {
			out[sub.ConsumerGroupID] = appendUnique(out[sub.ConsumerGroupID], t)
		}
	}
	for g := range out {
		sort.Strings(out[g])
	}
	return out
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}
