package callbacks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentbridge/bridge/store/broker"
)

// listeners keeps one set of broker consumers per consumer group, consuming
// the union of the topics of that group's active subscriptions; each message
// is checked against every subscription of the group. Consuming per group
// (rather than per subscription) matters: consumers of one group share its
// messages, so two subscriptions of the default group on the same topic
// would each see only part of it.
type listeners struct {
	mu      sync.Mutex
	ctx     context.Context // nil until Start
	running map[string]*groupListener
}

type groupListener struct {
	patterns []string
	subs     []broker.Subscription // listener.consumers consumers sharing the group
}

func (gl *groupListener) close() error {
	var errs []error
	for _, sub := range gl.subs {
		if err := sub.Close(); err != nil && !errors.Is(err, broker.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// start enables registration; sync registers the current subscriptions.
func (l *listeners) start(ctx context.Context) {
	l.mu.Lock()
	l.ctx = ctx
	l.running = map[string]*groupListener{}
	l.mu.Unlock()
}

// sync makes the broker subscriptions match the active event subscriptions.
func (l *listeners) sync(s *Service) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil || l.ctx.Err() != nil {
		return nil // not started, or stopping
	}
	want := s.reg.groups(&s.settings)
	var errs []error
	for group, gl := range l.running {
		if pats, ok := want[group]; ok && slices.Equal(pats, gl.patterns) {
			continue
		}
		// Closing waits for in-flight handlers; unacknowledged messages go
		// back to the group and are consumed by the replacement.
		if err := gl.close(); err != nil {
			errs = append(errs, err)
		}
		delete(l.running, group)
	}
	for group, pats := range want {
		if _, ok := l.running[group]; ok {
			continue
		}
		gl := &groupListener{patterns: pats}
		for range s.settings.Listener.Consumers {
			sub, err := s.broker.Subscribe(l.ctx, group, pats, s.handlerFor(group))
			if err != nil {
				errs = append(errs, fmt.Errorf("callbacks: subscribe %s to %v: %w", group, pats, err))
				break
			}
			gl.subs = append(gl.subs, sub)
		}
		if len(gl.subs) > 0 {
			l.running[group] = gl
			s.log.Info("callbacks: listening", "group", group, "topics", pats, "consumers", len(gl.subs))
		}
	}
	return errors.Join(errs...)
}

// stop closes every broker subscription.
func (l *listeners) stop() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for group, gl := range l.running {
		if err := gl.close(); err != nil {
			errs = append(errs, err)
		}
		delete(l.running, group)
	}
	l.ctx = nil
	return errors.Join(errs...)
}

// handlerFor returns the broker handler of a consumer group: it stores the
// event and its PENDING attempts, and only then acknowledges the message,
// so an event is never lost between the broker and the database.
func (s *Service) handlerFor(group string) broker.Handler {
	return func(ctx context.Context, m broker.Message) error {
		ev, ok := parseEvent(m)
		if !ok {
			s.log.Debug("callbacks: skipping a message without an event type", "topic", m.Topic, "offset", m.Offset)
			return nil
		}
		sub, ok := s.reg.acceptingSub(&s.settings, group, m.Topic, m.Timestamp, ev.Type)
		if !ok {
			return nil
		}
		_, err := s.enqueue(ctx, ev, s.reg.matching(ev.Type), TriggerEvent, sub.ID, "")
		return err
	}
}
