package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// commitTimeout bounds the offset commit after a poll, which also runs while
// a subscription closes (its own context is then already cancelled).
const commitTimeout = 10 * time.Second

// kafkaSub is one consumer group member.
type kafkaSub struct {
	k     *Kafka
	cl    *kgo.Client
	group string
	h     Handler

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{} // closed when the poll loop has returned
	handlers sync.WaitGroup
	once     sync.Once

	watchMu   sync.Mutex
	stopWatch func() bool
}

// Subscribe joins group with a new client consuming every topic matching
// patterns, including topics created later. A group new to a topic starts at
// its oldest retained record. The subscription runs until ctx is done, Close
// is called on it, or the broker is closed.
func (k *Kafka) Subscribe(ctx context.Context, group string, pats []string, h Handler) (Subscription, error) {
	if err := ValidateGroup(group); err != nil {
		return nil, fmt.Errorf("broker: subscribe: %w", err)
	}
	ps, err := parsePatterns(pats)
	if err != nil {
		return nil, fmt.Errorf("broker: subscribe %s: %w", group, err)
	}
	if h == nil {
		return nil, fmt.Errorf("broker: subscribe %s: %w: nil handler", group, ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("broker: subscribe %s: %w", group, err)
	}
	if k.closed.Load() {
		return nil, fmt.Errorf("broker: subscribe %s: %w", group, ErrClosed)
	}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeRegex(),
		kgo.ConsumeTopics(ps.regexes()...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		// Rebalances wait for the current poll's records to be handled and
		// committed: the next owner of a partition starts after them.
		kgo.BlockRebalanceOnPoll(),
	}
	if o := k.opts.SessionTimeout; o > 0 {
		opts = append(opts, kgo.SessionTimeout(o))
	}
	if o := k.opts.HeartbeatInterval; o > 0 {
		opts = append(opts, kgo.HeartbeatInterval(o))
	}
	if o := k.opts.RebalanceTimeout; o > 0 {
		opts = append(opts, kgo.RebalanceTimeout(o))
	}
	cl, err := kgo.NewClient(k.clientOpts(opts...)...)
	if err != nil {
		return nil, fmt.Errorf("broker: subscribe %s: %w", group, err)
	}
	s := &kafkaSub{k: k, cl: cl, group: group, h: h, done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(ctx)

	k.mu.Lock()
	if k.closed.Load() { // Close ran since the check above and will not see s
		k.mu.Unlock()
		s.cancel()
		cl.Close()
		return nil, fmt.Errorf("broker: subscribe %s: %w", group, ErrClosed)
	}
	k.subs[s] = struct{}{}
	k.mu.Unlock()

	go s.run()
	stopWatch := context.AfterFunc(ctx, s.stop)
	s.watchMu.Lock()
	s.stopWatch = stopWatch
	s.watchMu.Unlock()
	return s, nil
}

// Close stops the member, waits for in-flight handlers, commits what they
// acknowledged and leaves the group.
func (s *kafkaSub) Close() error {
	s.stop()
	return nil
}

func (s *kafkaSub) stop() {
	s.once.Do(func() {
		s.cancel()
		<-s.done
		s.handlers.Wait()
		s.cl.CloseAllowingRebalance()
		s.watchMu.Lock()
		if s.stopWatch != nil {
			s.stopWatch()
		}
		s.watchMu.Unlock()
		s.k.mu.Lock()
		delete(s.k.subs, s)
		s.k.mu.Unlock()
	})
}

// run polls, handles each poll's records and commits them, until stopped.
func (s *kafkaSub) run() {
	defer close(s.done)
	defer s.cl.AllowRebalance()
	for {
		fs := s.cl.PollRecords(s.ctx, s.k.opts.MaxPollRecords)
		if s.ctx.Err() != nil || fs.IsClientClosed() {
			return // records of this poll were not handled, so not committed
		}
		fs.EachError(func(topic string, p int32, err error) {
			s.k.opts.Logger.Warn("broker: kafka fetch", "group", s.group, "topic", topic, "partition", p, "err", err)
		})
		s.handle(fs)
		s.cl.AllowRebalance()
	}
}

// handle runs each partition's records in order, partitions in parallel, and
// commits each partition up to its last record handled successfully.
func (s *kafkaSub) handle(fs kgo.Fetches) {
	var (
		mu     sync.Mutex
		commit []*kgo.Record
		wg     sync.WaitGroup
	)
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		wg.Go(func() {
			var last *kgo.Record
			for _, r := range p.Records {
				if !s.deliver(r) {
					break // closing: later records stay uncommitted too
				}
				last = r
			}
			if last != nil {
				mu.Lock()
				commit = append(commit, last)
				mu.Unlock()
			}
		})
	})
	wg.Wait()
	if len(commit) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), commitTimeout)
	defer cancel()
	if err := s.cl.CommitRecords(ctx, commit...); err != nil {
		// The records will be delivered again: at least once.
		s.k.opts.Logger.Warn("broker: kafka commit", "group", s.group, "err", err)
	}
}

// deliver calls the handler until it succeeds, backing off between attempts;
// it returns false if the subscription stopped first.
func (s *kafkaSub) deliver(r *kgo.Record) bool {
	m := fromRecord(r)
	opts := s.k.opts
	for attempt := 1; ; attempt++ {
		err := runHandler(s.ctx, s.h, m, attempt, opts.RedeliveryTimeout, &s.handlers)
		if err == nil {
			return true
		}
		if s.ctx.Err() != nil {
			return false
		}
		if errors.Is(err, ErrHandlerTimeout) || errors.Is(err, ErrHandlerPanic) {
			opts.Logger.Warn("broker: handler failed", "group", s.group, "topic", m.Topic, "offset", m.Offset, "attempt", attempt, "err", err)
		}
		t := time.NewTimer(opts.backoff(attempt))
		select {
		case <-s.ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}
