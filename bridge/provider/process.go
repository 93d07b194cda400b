package provider

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// drainTimeout bounds how long Run waits for the output pipes to reach EOF
// after the process group is gone. Only a process that escaped the group
// (or a Windows grandchild) can hold them open longer.
const drainTimeout = 2 * time.Second

// turnState is what a parser has learnt about the turn so far.
type turnState struct {
	sessionID   string
	text        string // final text from the terminal event
	isError     bool
	subtype     string
	usage       Usage
	terminal    bool
	lastMessage string // last assistant message, the fallback answer
	lastError   string
	failure     string // FailureAuth, ... when the agent named the cause
}

// lineParser turns stdout lines into events. Calls are serialized.
type lineParser interface {
	// parseLine handles one line (terminator stripped; may be blank). It
	// must return at least one event for a non-blank line and never panic.
	parseLine(line []byte, now time.Time) []Event
	// finish is called once after the process exited and output is drained,
	// with the exit code (-1 for a signal) and the stderr tail.
	finish(exitCode int, stderr string, now time.Time) []Event
	state() *turnState
}

// procSpec is one subprocess invocation.
type procSpec struct {
	name   string
	cfg    Config // with defaults applied
	args   []string
	req    Request
	parser lineParser
}

// stream serializes parser access and emission between the stdout and
// stderr readers and the finalizer, and stops emission once Run returns.
type stream struct {
	mu       sync.Mutex
	closed   bool
	emit     func(Event)
	parser   lineParser
	stderr   *tailBuffer
	dropped  int
	terminal chan struct{} // closed when a result event was seen
	termOnce sync.Once
	// troubleSince is when the agent began retrying without progress
	// (zero while it makes progress), retries how often it has retried
	// since, and lastTrouble its latest retry or error text.
	troubleSince time.Time
	retries      int
	lastTrouble  string
}

func (s *stream) emitLocked(evs []Event) {
	for _, ev := range evs {
		switch ev.Kind {
		case EventResult:
			s.termOnce.Do(func() { close(s.terminal) })
			s.troubleSince, s.retries = time.Time{}, 0
		case EventRetry:
			if ev.ParentToolID == "" {
				if s.retries == 0 {
					s.troubleSince = ev.Time
				}
				s.retries++
				s.lastTrouble = ev.Text
			}
		case EventError:
			// The agent's own errors (parsed lines carry Raw) while it
			// retries, e.g. Codex falling back to another transport.
			if ev.Raw != nil && ev.ParentToolID == "" && s.retries > 0 {
				s.lastTrouble = ev.Text
			}
		case EventMessage, EventReasoning, EventToolCall, EventToolResult, EventUsage, EventSession:
			s.troubleSince, s.retries = time.Time{}, 0
		}
		if s.emit != nil {
			s.emit(ev)
		}
	}
}

func (s *stream) stdoutLine(line []byte, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.emitLocked(s.parser.parseLine(line, now))
}

func (s *stream) oversized(size, max int, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.dropped++
	s.emitLocked([]Event{{
		Kind:      EventError,
		SessionID: s.parser.state().sessionID,
		Text:      fmt.Sprintf("stdout line of %d bytes exceeds the %d-byte line limit; skipped", size, max),
		Time:      now,
	}})
}

func (s *stream) readStdout(r io.Reader, max int) {
	lr := newLineReader(r, max)
	for {
		line, skipped, err := lr.next()
		now := time.Now()
		switch {
		case skipped > 0:
			s.oversized(skipped, max, now)
		case line != nil:
			s.stdoutLine(line, now)
		}
		if err != nil {
			return
		}
	}
}

// readStderr keeps the stderr tail and emits each line as a log event.
func (s *stream) readStderr(r io.Reader) {
	buf := make([]byte, 32<<10)
	var partial []byte
	skipping := false // rest of an over-long line
	flush := func(b []byte, now time.Time) {
		text := strings.TrimRight(string(b), "\r")
		if strings.TrimSpace(text) == "" {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return
		}
		s.emitLocked([]Event{{Kind: EventLog, SessionID: s.parser.state().sessionID, Text: text, Time: now}})
	}
	for {
		n, err := r.Read(buf)
		if n > 0 {
			now := time.Now()
			chunk := buf[:n]
			s.mu.Lock()
			_, _ = s.stderr.Write(chunk)
			s.mu.Unlock()
			for len(chunk) > 0 {
				i := bytes.IndexByte(chunk, '\n')
				if i < 0 {
					if !skipping {
						partial = append(partial, chunk...)
						if len(partial) > maxTextBytes {
							flush([]byte(truncateText(string(partial), maxTextBytes)), now)
							partial, skipping = partial[:0], true
						}
					}
					break
				}
				if !skipping {
					partial = append(partial, chunk[:i]...)
					flush(partial, now)
				}
				partial, skipping = partial[:0], false
				chunk = chunk[i+1:]
			}
		}
		if err != nil {
			if len(partial) > 0 && !skipping {
				flush(partial, time.Now())
			}
			return
		}
	}
}

// stalled reports for how long the agent has been retrying without
// progress, if that is at least limit, and its last report. It takes
// repeated retries: one retry followed by a long silent answer is not a
// stall (the inactivity watchdog of the caller bounds silence).
func (s *stream) stalled(now time.Time, limit time.Duration) (time.Duration, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retries < 2 {
		return 0, "", false
	}
	d := now.Sub(s.troubleSince)
	return d, s.lastTrouble, d >= limit
}

// runProcess runs spec to completion; see Provider.Run for the contract.
func runProcess(ctx context.Context, spec procSpec, emit func(Event)) (Result, error) {
	cfg := spec.cfg
	res := Result{ExitCode: -1, IsError: true}
	if err := ctx.Err(); err != nil {
		res.Text = "cancelled before start"
		return res, fmt.Errorf("%s: %w", spec.name, err)
	}
	path, err := cfg.LookPath(cfg.Path)
	if err != nil {
		res.Text = fmt.Sprintf("%s executable %q not found", spec.name, cfg.Path)
		return res, fmt.Errorf("%s: executable %q not found: %w", spec.name, cfg.Path, err)
	}

	cmd := exec.Command(path, spec.args...)
	cmd.Dir = spec.req.WorkDir
	// exec keeps the last value of duplicate keys, so request env wins.
	cmd.Env = append(append(os.Environ(), cfg.Env...), spec.req.Env...)
	setProcGroup(cmd)

	// Own *os.File pipes instead of exec's copying goroutines: cmd.Wait
	// then returns as soon as the agent exits even if a grandchild still
	// holds the pipes, and we decide ourselves when to stop reading.
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return res, fmt.Errorf("%s: stdin pipe: %w", spec.name, err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return res, fmt.Errorf("%s: stdout pipe: %w", spec.name, err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return res, fmt.Errorf("%s: stderr pipe: %w", spec.name, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		res.Text = fmt.Sprintf("cannot start %s: %v", spec.name, err)
		return res, fmt.Errorf("%s: start %s: %w", spec.name, path, err)
	}
	// The child holds its own copies; ours must go so EOF can happen.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()

	st := &stream{
		emit:     emit,
		parser:   spec.parser,
		stderr:   newTailBuffer(cfg.StderrBytes),
		terminal: make(chan struct{}),
	}

	go func() {
		// EPIPE from an agent that never reads stdin is not our problem.
		_, _ = io.WriteString(inW, spec.req.Prompt)
		_ = inW.Close()
	}()
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); st.readStdout(outR, cfg.MaxLineBytes) }()
	go func() { defer readers.Done(); st.readStderr(errR) }()
	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()

	waitCh := make(chan error, 1)
	go func() { waitCh <- cmd.Wait() }()

	// Lifecycle: run until exit; on cancel (or when the agent lingers after
	// its result) SIGTERM the group, and SIGKILL it after the grace period.
	var (
		cancelled            bool
		stall                *StallError
		ctxDone              = ctx.Done()
		terminal             = st.terminal
		exitTimer, killTimer <-chan time.Time
	)
	stallTick := time.NewTicker(max(cfg.StallTimeout/4, 10*time.Millisecond))
	defer stallTick.Stop()
	for waiting := true; waiting; {
		select {
		case <-waitCh:
			waiting = false
		case <-ctxDone:
			ctxDone, cancelled = nil, true
			terminateGroup(cmd.Process)
			killTimer = time.After(cfg.KillGrace)
		case now := <-stallTick.C:
			if d, last, ok := st.stalled(now, cfg.StallTimeout); ok && stall == nil && !cancelled {
				stall = &StallError{Provider: spec.name, For: d, LastError: last}
				stallTick.Stop()
				terminateGroup(cmd.Process)
				killTimer = time.After(cfg.KillGrace)
			}
		case <-terminal:
			terminal = nil
			exitTimer = time.After(cfg.ExitGrace)
		case <-exitTimer:
			exitTimer = nil
			terminateGroup(cmd.Process)
			killTimer = time.After(cfg.KillGrace)
		case <-killTimer:
			killTimer = nil
			killGroup(cmd.Process)
		}
	}
	// Tool processes the agent left behind die with the turn; this also
	// closes their copies of our pipes.
	killLeftovers(cmd.Process)
	_ = inW.Close()
	select {
	case <-readersDone:
	case <-time.After(drainTimeout):
		// Closing the read ends unblocks the readers (unix); elsewhere they
		// are abandoned and silenced by st.closed below.
		_ = outR.Close()
		_ = errR.Close()
		select {
		case <-readersDone:
		case <-time.After(drainTimeout):
		}
	}
	_ = outR.Close()
	_ = errR.Close()
	// Second sweep: catches a member that was mid-fork during the first.
	killLeftovers(cmd.Process)

	exitCode := -1
	if cmd.ProcessState != nil {
		exitCode = cmd.ProcessState.ExitCode()
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	stderr := st.stderr.String()
	now := time.Now()
	st.emitLocked(spec.parser.finish(exitCode, stderr, now))
	ts := spec.parser.state()
	res = Result{
		SessionID:    ts.sessionID,
		Text:         ts.text,
		Usage:        ts.usage,
		IsError:      ts.isError,
		Subtype:      ts.subtype,
		ExitCode:     exitCode,
		Stderr:       stderr,
		DroppedLines: st.dropped,
	}
	if ts.isError || !ts.terminal {
		res.Failure = ts.failure
	}
	var runErr error
	switch {
	case ts.terminal:
		// The agent reported its outcome; a later cancel or a forced exit
		// after the result does not change it.
	case cancelled:
		res.IsError = true
		res.Text = "cancelled"
		runErr = fmt.Errorf("%s: run cancelled: %w", spec.name, ctx.Err())
	case stall != nil:
		if stall.Failure = ts.failure; stall.Failure == "" {
			stall.Failure = failureFromText(stall.LastError)
		}
		res.IsError = true
		res.Text = stall.Error()
		res.Failure = stall.Failure
		runErr = stall
	default:
		exitErr := &ExitError{Provider: spec.name, ExitCode: exitCode, Stderr: stderr}
		res.IsError = true
		res.Text = exitErr.Error()
		if ts.lastError != "" {
			res.Text += " (last error: " + ts.lastError + ")"
		}
		runErr = exitErr
	}
	if runErr != nil {
		st.emitLocked([]Event{{Kind: EventError, SessionID: ts.sessionID, Text: res.Text, Time: now}})
	}
	st.closed = true
	return res, runErr
}
