// Package ingest is the webhook ingestion service of ingest/README.md: it receives
// provider webhooks at POST /api/v1/webhook/{provider}, validates and
// enriches them, and acknowledges each one only after publishing it durably
// to the broker (see envelope.go for the message format). Refused and failed
// webhooks go to a dead-letter topic with their reason. A processor
// framework consumes the provider topics, verifies signatures, deduplicates
// on the provider's delivery id and records the outcome.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/ingest/verify"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
)

// DLQIndexGroup is the consumer group that indexes the dead-letter topic
// into SQLite for `bridge webhooks dlq`.
const DLQIndexGroup = "webhooks-dlq-index"

// purgeInterval is how often expired idempotency claims and old records go.
const purgeInterval = 10 * time.Minute

// Service is the webhook ingestion service.
type Service struct {
	cfg     Config
	db      *store.DB
	broker  broker.Broker
	log     *slog.Logger
	isOwner func(*http.Request) bool
	now     func() time.Time

	namePattern    *regexp.Regexp
	allowedMethods map[string]bool
	allowHeader    string
	contentTypes   map[string]bool
	source         *sourceFilter
	limiter        *rateLimiter
	comp           *compressor
	pub            *publisher
	hub            *hub
	dedupe         *dedupeStore
	verifiers      map[string]verify.Verifier
	cursors        *httpx.Cursors
	budget         *bodyBudget
	headerMaps     sync.Pool // map[string]string of published envelopes, emptied (accept)
	headers        *headerPolicy
	done           chan struct{} // closed by Close: ends streams

	mu        sync.Mutex
	sinks     []sinkEntry
	started   bool
	subs      []broker.Subscription
	bg        sync.WaitGroup
	closeOnce sync.Once
}

// New builds the service from the platform.webhooks section of deps.Config.
// The database must include Migrations().
func New(deps daemon.Deps) (*Service, error) {
	cfg, err := LoadConfig(deps.Config)
	if err != nil {
		return nil, err
	}
	return newService(deps, cfg)
}

func newService(deps daemon.Deps, cfg Config) (*Service, error) {
	if deps.DB == nil || deps.Broker == nil {
		return nil, errors.New("ingest: a database and a broker are required")
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{
		cfg: cfg, db: deps.DB, broker: deps.Broker, log: log.With("service", "ingest"), isOwner: deps.IsOwner,
		now: time.Now, hub: newHub(), done: make(chan struct{}),
		allowedMethods: map[string]bool{}, contentTypes: map[string]bool{},
		dedupe: &dedupeStore{db: deps.DB, window: cfg.Idempotency.Window.D()},
		budget: &bodyBudget{limit: cfg.Security.MaxInFlightBytes},
	}
	var err error
	if s.namePattern, err = regexp.Compile(cfg.Security.ProviderNamePattern); err != nil {
		return nil, fmt.Errorf("ingest: provider-name-pattern: %w", err)
	}
	var methods []string
	for _, m := range cfg.Security.AllowedMethods {
		m = strings.ToUpper(m)
		if !s.allowedMethods[m] {
			s.allowedMethods[m] = true
			methods = append(methods, m)
		}
	}
	s.allowHeader = strings.Join(methods, ", ")
	for _, ct := range cfg.Security.AllowedContentTypes {
		s.contentTypes[strings.ToLower(strings.TrimSpace(ct))] = true
	}
	if s.headers, err = newHeaderPolicy(cfg.Security, cfg.Processors, deps.Box); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if s.source, err = newSourceFilter(cfg.Security, cfg.IPWhitelist); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	s.limiter = newRateLimiter(cfg.RateLimit, func() time.Time { return s.now() })
	if s.comp, err = newCompressor(cfg.Compression); err != nil {
		return nil, err
	}
	if s.verifiers, err = buildVerifiers(cfg.Processors); err != nil {
		s.comp.Close()
		return nil, err
	}
	// The data directory's key keeps page cursors valid across restarts.
	if s.cursors, err = httpx.LoadCursors(deps.DataDir, "ingest"); err != nil {
		s.comp.Close()
		return nil, fmt.Errorf("ingest: %w", err)
	}
	s.pub = &publisher{broker: deps.Broker, retry: cfg.Retry, sleep: sleepCtx}
	if cfg.Batching.Enabled {
		s.pub.batch = newBatcher(cfg.Batching, func(provider string, msgs []broker.Message) []error {
			return s.pub.publishBatch(context.Background(), provider, msgs)
		})
	}
	return s, nil
}

// Config returns the effective configuration (secrets print redacted).
func (s *Service) Config() Config { return s.cfg }

// Start subscribes the processors (processor.concurrency subscriptions of
// processor.group over the configured providers' topics) and the
// dead-letter indexer, and starts the purge loop. All stop when ctx ends
// or Close is called.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("ingest: already started")
	}
	s.started = true
	var subs []broker.Subscription
	fail := func(err error) error {
		for _, sub := range subs {
			_ = sub.Close()
		}
		return err
	}
	if topics := s.processorTopics(); s.cfg.Processor.Enabled && len(topics) > 0 {
		for range s.cfg.Processor.Concurrency {
			sub, err := s.broker.Subscribe(ctx, s.cfg.Processor.Group, topics, s.process)
			if err != nil {
				return fail(fmt.Errorf("ingest: start processor: %w", err))
			}
			subs = append(subs, sub)
		}
		s.log.Info("webhook processors started", "topics", topics, "providers", slices.Sorted(maps.Keys(s.verifiers)))
	}
	if s.cfg.DLQ.Enabled {
		sub, err := s.broker.Subscribe(ctx, DLQIndexGroup, []string{s.cfg.DLQ.Topic}, s.indexDeadLetter)
		if err != nil {
			return fail(fmt.Errorf("ingest: start dead-letter index: %w", err))
		}
		subs = append(subs, sub)
	}
	s.subs = subs
	s.bg.Add(1)
	go s.purgeLoop(ctx)
	return nil
}

func (s *Service) purgeLoop(ctx context.Context) {
	defer s.bg.Done()
	t := time.NewTicker(purgeInterval)
	defer t.Stop()
	for {
		if err := s.dedupe.purge(ctx, s.now(), s.cfg.Processor.RecordRetention.D()); err != nil && ctx.Err() == nil {
			s.log.Warn("webhook purge failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-t.C:
		}
	}
}

// Close flushes pending batches, stops the consumers and ends streams. The
// daemon calls it after its listeners have drained; it does not close the
// broker or the database.
func (s *Service) Close() error {
	var errs []error
	s.closeOnce.Do(func() {
		close(s.done)
		if s.pub.batch != nil {
			s.pub.batch.close()
		}
		s.mu.Lock()
		subs := s.subs
		s.subs = nil
		s.mu.Unlock()
		for _, sub := range subs {
			if err := sub.Close(); err != nil && !errors.Is(err, broker.ErrClosed) {
				errs = append(errs, err)
			}
		}
		s.bg.Wait()
		s.comp.Close()
	})
	return errors.Join(errs...)
}
