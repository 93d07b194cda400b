// Package daemon assembles the long-running process behind `bridge serve`:
// it owns the data directory, opens the stores, builds every subsystem, binds
// the two loopback listeners and shuts everything down in order.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/julienschmidt/httprouter"
	bolt "go.etcd.io/bbolt"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
	"github.com/agentbridge/bridge/store/secretbox"
)

// BuildInfo identifies the binary; goreleaser sets it through ldflags in main.
type BuildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
}

// Options are what `bridge serve` (or a test) hands to Start.
type Options struct {
	DataDir string
	Config  Config       // daemon section, already merged with flags
	File    *config.File // the whole config.yaml, for subsystem sections
	Logger  *slog.Logger
	Build   BuildInfo
	// ShutdownTimeout bounds how long in-flight requests may drain (default 10s).
	ShutdownTimeout time.Duration
	// Migrations are every subsystem's schema migrations (see package wire).
	Migrations []store.Migration
	// Subsystems build the subsystems, in order, once the stores are open.
	Subsystems []Factory
	// DisableKeyring keeps the secret box's key in a 0600 file instead of
	// the OS keychain (tests; also BRIDGE_DISABLE_KEYRING=1).
	DisableKeyring bool
}

// Subsystem is a part of the daemon that serves routes and may run loops.
type Subsystem interface {
	Service
	// Routes registers the subsystem's handlers on the listener(s) it serves.
	Routes(bridge, services *httprouter.Router)
}

// Readiness is implemented by subsystems that can restrict readiness: while
// Ready answers an error, GET /health/ready answers 503 (the platform,
// while a project's compatibility verdict is restricted).
type Readiness interface {
	Ready(ctx context.Context) error
}

// Factory builds a subsystem from what the daemon provides.
type Factory func(Deps) (Subsystem, error)

// Service is a subsystem's lifecycle as the daemon sees it.
type Service interface {
	// Start launches background loops; they stop when ctx is cancelled.
	Start(ctx context.Context) error
	// Close releases resources after the listeners have stopped.
	Close() error
}

// Daemon is a running daemon.
type Daemon struct {
	opts      Options
	log       *slog.Logger
	DB        *store.DB
	Bolt      *bolt.DB
	Broker    broker.Broker
	ownerHash [32]byte

	bridgeLn, servicesLn   net.Listener
	bridgeSrv, servicesSrv *http.Server
	services               []Service

	ctx    context.Context // cancelled when shutdown starts: ends SSE streams and loops
	cancel context.CancelFunc
	wg     sync.WaitGroup

	ready        bool
	readyMu      sync.RWMutex
	state        State
	shutdownOnce sync.Once
	shutdownErr  error
	serveErr     chan error
}

// Start opens the data directory and binds both listeners. On error nothing is
// left open and nothing in the data directory is overwritten.
func Start(ctx context.Context, opts Options) (_ *Daemon, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.File == nil {
		opts.File = config.Empty()
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 10 * time.Second
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	opts.DataDir = dir
	if err := EnsureDataDir(dir); err != nil {
		return nil, err
	}
	d := &Daemon{opts: opts, log: opts.Logger, serveErr: make(chan error, 2)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	var closers []func() error
	defer func() {
		if err != nil {
			d.cancel()
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i]()
			}
		}
	}()

	// bbolt holds an exclusive lock for as long as the daemon runs: it is what
	// makes a second `serve` on the same directory fail fast and harmlessly.
	boltOpts := &bolt.Options{Timeout: 300 * time.Millisecond}
	if runtime.GOOS != "windows" {
		// Reserve address space up front so the file's growth never remaps
		// (a remap blocks every reader and writer). On Windows the mmap size
		// is also the file size, so it grows as needed there.
		boltOpts.InitialMmapSize = 1 << 30
	}
	d.Bolt, err = d.openEvents(ctx, boltOpts)
	if err != nil {
		return nil, err
	}
	closers = append(closers, d.Bolt.Close)

	retention := brokerRetention(opts.Config.Events)
	retention.JournalPath = filepath.Join(dir, JournalFile)
	retention.Logger = d.log
	d.Broker, err = openBroker(ctx, d.Bolt, retention)
	if err != nil {
		return nil, err
	}
	closers = append(closers, d.Broker.Close)

	d.DB, err = store.Open(ctx, filepath.Join(dir, DatabaseFile), opts.Migrations, store.Options{})
	if err != nil {
		return nil, err
	}
	closers = append(closers, d.DB.Close)

	box, err := secretbox.Open(ctx, dir, secretbox.Options{Logger: d.log, DisableKeyring: opts.DisableKeyring || os.Getenv("BRIDGE_DISABLE_KEYRING") == "1"})
	if err != nil {
		return nil, fmt.Errorf("secret box: %w", err)
	}

	bridgeRouter, servicesRouter := newRouter(bridgeNotFound, bridgeShape, d.log), newRouter(problemNotFound, servicesShape, d.log)
	d.health(servicesRouter)

	d.bridgeLn, err = listen(opts.Config.Listen.BridgeHost, opts.Config.Listen.BridgePort, "bridge", "--port or listen.bridge-port")
	if err != nil {
		return nil, err
	}
	closers = append(closers, d.bridgeLn.Close)
	d.servicesLn, err = listen(opts.Config.Listen.ServicesHost, opts.Config.Listen.ServicesPort, "services", "--services-port, SERVER_PORT or listen.services-port")
	if err != nil {
		return nil, err
	}
	closers = append(closers, d.servicesLn.Close)

	// Only now has the daemon started successfully: create the owner token.
	var created bool
	d.ownerHash, created, err = ensureOwnerToken(filepath.Join(dir, OwnerTokenFile))
	if err != nil {
		return nil, err
	}
	if created {
		d.log.Info("created owner token", "path", filepath.Join(dir, OwnerTokenFile))
	}

	l := opts.Config.Listen
	bridgeGuard := httpx.NewGuard(tcpPort(d.bridgeLn), l.AllowedHosts, l.AllowedOrigins)
	servicesGuard := httpx.NewGuard(tcpPort(d.servicesLn), l.AllowedHosts, l.AllowedOrigins)
	d.bridgeSrv = d.newServer(bridgeGuard.Wrap(bridgeDenied, bridgeRouter))
	// The request id is assigned before the guard, so refusals carry it
	// too; docs/platform-api.md names it X-Platform-Request-ID (see withPlatformRequestID).
	d.servicesSrv = d.newServer(httpx.WithRequestID("X-Request-ID", withPlatformRequestID(servicesGuard.Wrap(problemDenied, servicesRouter))))

	deps := Deps{
		DataDir: dir, DB: d.DB, Bolt: d.Bolt, Broker: d.Broker, Box: box, Config: opts.File, Logger: d.log, IsOwner: d.isOwner,
		OwnerHash: d.ownerHash, Build: opts.Build, EventsCapacity: opts.Config.Events.Capacity,
		BridgeAddr: d.bridgeLn.Addr().String(), ServicesAddr: d.servicesLn.Addr().String(),
	}
	for _, build := range opts.Subsystems {
		sub, err := build(deps)
		if err != nil {
			return nil, err
		}
		d.services = append(d.services, sub)
		closers = append(closers, sub.Close)
		sub.Routes(bridgeRouter, servicesRouter)
	}
	for _, s := range d.services {
		if err := s.Start(d.ctx); err != nil {
			return nil, err
		}
	}

	d.state = State{
		PID:          os.Getpid(),
		BridgeAddr:   d.bridgeLn.Addr().String(),
		ServicesAddr: d.servicesLn.Addr().String(),
		BridgeURL:    "http://" + d.bridgeLn.Addr().String(),
		ServicesURL:  "http://" + d.servicesLn.Addr().String(),
		Version:      opts.Build.Version,
		Commit:       opts.Build.Commit,
		StartedAt:    time.Now().UTC().Truncate(time.Second),
		DataDir:      dir,
	}
	// Ready before daemon.json appears and before anything is served: a
	// client that finds daemon.json never meets the not-yet-ready 503 of
	// /health/ready (the bound listeners hold its connection until serve
	// runs).
	d.setReady(true)
	if err := writeState(filepath.Join(dir, DaemonFile), d.state); err != nil {
		return nil, err
	}
	d.serve(d.bridgeSrv, shapedListener{Listener: d.bridgeLn, shape: bridgeShape, maxHeaderKiB: maxHeaderBytes >> 10})
	d.serve(d.servicesSrv, shapedListener{Listener: d.servicesLn, shape: servicesShape, maxHeaderKiB: maxHeaderBytes >> 10})
	d.log.Info("bridge daemon started", "bridge", d.state.BridgeURL, "services", d.state.ServicesURL, "data_dir", dir, "version", opts.Build.Version)
	return d, nil
}

// newServer builds a listener's server. Bodies get a read deadline per
// request (withBodyDeadline), not ReadTimeout, which would cut SSE streams.
func (d *Daemon) newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           withBodyDeadline(d.opts.Config.Listen.BodyReadTimeout.D(), h),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return d.ctx },
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelDebug),
	}
}

// maxHeaderBytes bounds a request's line and headers; past it Go's server
// answers 431 (in the listener's shape, see shapedConn).
const maxHeaderBytes = 64 << 10

func (d *Daemon) serve(srv *http.Server, ln net.Listener) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.serveErr <- err
		}
	}()
}

// State is what daemon.json holds.
func (d *Daemon) State() State { return d.state }

// OwnerHash is the hash of the owner token.
func (d *Daemon) OwnerHash() [32]byte { return d.ownerHash }

// Context is cancelled when shutdown begins.
func (d *Daemon) Context() context.Context { return d.ctx }

// Wait blocks until ctx is done or a listener fails, then shuts down.
func (d *Daemon) Wait(ctx context.Context) error {
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-d.serveErr:
		d.log.Error("listener failed", "err", serveErr)
	}
	return errors.Join(serveErr, d.Shutdown())
}

// Shutdown drains in-flight requests, stops loops and streams, closes the
// stores and removes daemon.json. It is safe to call more than once.
func (d *Daemon) Shutdown() error {
	d.shutdownOnce.Do(func() {
		d.setReady(false)
		d.log.Info("shutting down")
		// Cancelling first ends SSE streams and long polls so that the
		// HTTP drain below does not wait for them.
		d.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), d.opts.ShutdownTimeout)
		defer cancel()
		var errs []error
		for _, srv := range []*http.Server{d.bridgeSrv, d.servicesSrv} {
			if err := srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("drain: %w", err))
				srv.Close()
			}
		}
		d.wg.Wait()
		for i := len(d.services) - 1; i >= 0; i-- {
			if err := d.services[i].Close(); err != nil {
				errs = append(errs, err)
			}
		}
		errs = append(errs, d.Broker.Close(), d.DB.Close(), d.Bolt.Close())
		if err := os.Remove(filepath.Join(d.opts.DataDir, DaemonFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		d.shutdownErr = errors.Join(errs...)
		d.log.Info("stopped")
	})
	return d.shutdownErr
}

func (d *Daemon) setReady(v bool) {
	d.readyMu.Lock()
	d.ready = v
	d.readyMu.Unlock()
}

func (d *Daemon) isReady() bool {
	d.readyMu.RLock()
	defer d.readyMu.RUnlock()
	return d.ready
}

// EnsureDataDir creates the data directory (0700) and checks it is writable.
func EnsureDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return fmt.Errorf("data directory %s is not writable: %w", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// MaxBrokerMessage bounds one broker message: a 1 MiB webhook body plus its
// envelope headers fits.
const MaxBrokerMessage = 2 << 20

// openBroker returns the durable in-process broker, or Kafka when
// PLATFORM_KAFKA_BOOTSTRAP_SERVERS names a cluster.
func openBroker(ctx context.Context, db *bolt.DB, retention broker.BoltOptions) (broker.Broker, error) {
	if servers := broker.ParseBootstrapServers(os.Getenv("PLATFORM_KAFKA_BOOTSTRAP_SERVERS")); len(servers) > 0 {
		k, err := broker.NewKafka(ctx, broker.KafkaOptions{Brokers: servers})
		if err != nil {
			return nil, fmt.Errorf("kafka broker: %w", err)
		}
		return k, nil
	}
	retention.MaxMessageBytes = MaxBrokerMessage
	b, err := broker.NewBolt(db, retention)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	return b, nil
}

func boltOpenError(dir string, err error) error {
	if errors.Is(err, bolt.ErrTimeout) {
		msg := fmt.Sprintf("another bridge daemon is already using %s", dir)
		if s, rerr := ReadState(dir); rerr == nil {
			msg += fmt.Sprintf(" (pid %d, bridge %s)", s.PID, s.BridgeURL)
		}
		return errors.New(msg + "; or bridge migrate is running on it")
	}
	return fmt.Errorf("%s is unreadable or corrupt (%v); move it aside (with %s and %[3]s.1) to start with an empty event log", filepath.Join(dir, EventsFile), err, JournalFile)
}

func listen(host string, port int, name, hint string) (net.Listener, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%s listener: %s is already in use; choose another port with %s", name, addr, hint)
		}
		return nil, fmt.Errorf("%s listener: %w", name, err)
	}
	return ln, nil
}

func tcpPort(ln net.Listener) int {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

func newRouter(notFound http.HandlerFunc, shape errorShape, log *slog.Logger) *httprouter.Router {
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = true
	r.NotFound = notFound
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		notFound(w, req)
	})
	r.PanicHandler = shape.panicHandler(log)
	return r
}

// health serves the probes of docs/platform-api.md's "Public and root routes".
func (d *Daemon) health(r *httprouter.Router) {
	live := func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
		w.Header().Set(platformWireVersionHeader, platformWireVersion)
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "up"})
	}
	ready := func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
		w.Header().Set(platformWireVersionHeader, platformWireVersion)
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		if !d.isReady() || d.DB.Reader().PingContext(ctx) != nil {
			httpx.WriteProblem(w, req, &httpx.Problem{Status: http.StatusServiceUnavailable, Code: "PF-UNAVAILABLE", Message: "the service is not ready"})
			return
		}
		for _, s := range d.services {
			if r, ok := s.(Readiness); ok && r.Ready(ctx) != nil {
				httpx.WriteProblem(w, req, &httpx.Problem{Status: http.StatusServiceUnavailable, Code: "PF-UNAVAILABLE", Message: "the service is restricted"})
				return
			}
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
	r.GET("/health/live", live)
	r.HEAD("/health/live", live)
	r.GET("/health/ready", ready)
	r.HEAD("/health/ready", ready)
}

// The health probes are platform routes (docs/platform-api.md, "Public and root routes"),
// so they carry the platform's wire version like every platform response.
const (
	platformWireVersionHeader = "X-Platform-Wire-Version"
	platformWireVersion       = "platform/api-v1"
)

// withPlatformRequestID repeats the request id that httpx.WithRequestID
// assigned as X-Platform-Request-ID, the name docs/platform-api.md gives it, so every
// response of the services listener carries it under both names.
func withPlatformRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Platform-Request-ID", httpx.RequestID(r))
		next.ServeHTTP(w, r)
	})
}

func problemNotFound(w http.ResponseWriter, r *http.Request) {
	httpx.WriteProblem(w, r, &httpx.Problem{Status: http.StatusNotFound, Code: "PF-NOT-FOUND", Message: "no such route"})
}

func problemDenied(w http.ResponseWriter, r *http.Request, reason string) {
	httpx.WriteProblem(w, r, &httpx.Problem{Status: http.StatusForbidden, Code: "PF-FORBIDDEN", Message: reason})
}

func bridgeNotFound(w http.ResponseWriter, r *http.Request) {
	httpx.WriteJSON(w, http.StatusNotFound, map[string]any{"error": map[string]string{"code": "not_found", "message": "no such route"}})
}

func bridgeDenied(w http.ResponseWriter, r *http.Request, reason string) {
	httpx.WriteJSON(w, http.StatusForbidden, map[string]any{"error": map[string]string{"code": "host_not_allowed", "message": reason}})
}
