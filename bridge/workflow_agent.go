package bridge

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/kernel"
)

// PlatformClient is the internal client that owns the jobs of workflow
// agent steps: they appear in the job list of that client (a token minted
// for client "platform" reads them) and of the owner, and nobody else's.
const PlatformClient = "platform"

// SourceWorkflow is the source of the jobs of workflow agent steps.
const SourceWorkflow = "workflow"

// OutputCheck answers the refusal an agent task's output would get from the
// run (nil when its step accepts it); the platform implements it.
type OutputCheck func(ctx context.Context, task engine.AgentTask, output json.RawMessage) error

// WorkflowAgents runs the agent steps of workflow runs as bridge jobs: it
// implements engine.AgentRunner (bound by package wire).
type WorkflowAgents struct {
	s     *Service
	check OutputCheck
	tools ToolCaller // nil: agent steps' tools are not served
}

// WorkflowAgents returns the agent runner of s; check (optional) vets an
// answer before it is reported, so an answer the step would refuse fails
// the job's task instead of being dropped by the run.
func (s *Service) WorkflowAgents(check OutputCheck) *WorkflowAgents {
	return &WorkflowAgents{s: s, check: check}
}

var _ engine.AgentRunner = (*WorkflowAgents)(nil)

// Metadata keys of an agent step's job: the step's model and turn bound,
// which the runner passes to the provider (claude, codex).
const (
	metaModel    = "model"
	metaMaxTurns = "maxTurns"
)

// modelName is what an agent step's model may be: it becomes an argument
// of the agent's command line, so it must not look like an option.
var modelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$`)

// agentStepOptions answers the model and turn bound of the job of a
// workflow agent step (the platform client's only; other jobs use their
// profile's settings, whatever their metadata says).
func agentStepOptions(job Job) (model string, maxTurns int) {
	if job.Client != PlatformClient || job.Source != SourceWorkflow {
		return "", 0
	}
	if m := job.Metadata[metaModel]; modelName.MatchString(m) {
		model = m
	}
	if n, err := strconv.Atoi(job.Metadata[metaMaxTurns]); err == nil && n > 0 {
		maxTurns = n
	}
	return model, maxTurns
}

// agentWaitPoll is how often a waiting agent step rereads its job when no
// change woke it (a safety net: turns wake it when they end).
const agentWaitPoll = time.Second

// RunAgent submits the task's job (or finds the job of an earlier attempt
// by the task's operation key), waits for it to end and answers its result.
// When ctx ends first (deadline, cancelled run) the job is cancelled and
// AGENT_TIMEOUT or AGENT_CANCELLED answered (a deadline that passed before
// anything was submitted is AGENT_TIMEOUT too). When the step cannot follow
// a job it knows (it cannot record the attempt, say), the job is cancelled
// and the error answered with its id. When the daemon stops, the job is
// left as it is (a running one is marked interrupted by the next start)
// and the error is answered.
func (a *WorkflowAgents) RunAgent(ctx context.Context, t engine.AgentTask) (engine.AgentResult, error) {
	s := a.s
	if t.Deadline != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, *t.Deadline)
		defer cancel()
	}
	profile, ok := s.agentProfile(t.Spec.Provider)
	if !ok {
		return engine.AgentResult{Status: string(StateFailed), Code: "AGENT_PROVIDER_UNKNOWN",
			Message: fmt.Sprintf("the bridge has no profile or provider %q (profiles: %s)", t.Spec.Provider, strings.Join(s.profileNames(), ", "))}, nil
	}
	if t.Spec.Model != "" && !modelName.MatchString(t.Spec.Model) {
		return engine.AgentResult{Status: string(StateFailed), Code: "AGENT_MODEL_INVALID",
			Message: fmt.Sprintf("the agent step's model %q is not a model name (letters, digits and . _ : / @ -, at most 128)", t.Spec.Model)}, nil
	}
	prompt := agentPrompt(t.Spec)
	if strings.TrimSpace(prompt) == "" {
		// The agent CLIs answer a blank prompt with no result at all.
		return engine.AgentResult{Status: string(StateFailed), Code: "AGENT_PROMPT_EMPTY",
			Message: "the agent step has no prompt and no instructions"}, nil
	}
	if n := utf8.RuneCountInString(prompt); n > maxTextChars {
		return engine.AgentResult{Status: string(StateFailed), Code: "AGENT_PROMPT_TOO_LONG",
			Message: fmt.Sprintf("the agent prompt has %d characters; a bridge job takes at most %d", n, maxTextChars)}, nil
	}
	if a.tools != nil && len(t.Spec.ToolDefs) > 0 {
		// Registered before the job exists, so its first turn finds it.
		defer s.agentTools.register(t.OperationKey, &stepTools{run: t.RunID, task: t.TaskID, tools: t.Spec.ToolDefs, caller: a.tools})()
	}
	id, err := a.submit(ctx, t, profile, prompt)
	switch {
	case err == nil:
		job, werr := a.wait(ctx, id)
		if werr == nil {
			// Its checks read the database: the deadline must not fail
			// a job that has ended.
			return a.result(context.WithoutCancel(ctx), t, job), nil
		}
		err = werr
	case id == "":
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && (s.ctx == nil || s.ctx.Err() == nil) {
			// The deadline passed before a job was recorded (submit
			// committed nothing): the step timed out, as it would have a
			// moment later while its job ran.
			return engine.AgentResult{Status: string(StateCancelled), Code: "AGENT_TIMEOUT",
				Message: "the agent step's deadline passed before its job was submitted"}, nil
		}
		return engine.AgentResult{}, err
	}
	// A job exists (it may run again after a retry even when submit failed
	// later). When the daemon stops it is left to be marked interrupted by
	// the next start; otherwise the step no longer follows it, so it is
	// cancelled, and a later attempt of the step retries it.
	res := engine.AgentResult{JobID: id}
	if s.ctx != nil && s.ctx.Err() != nil {
		return res, err
	}
	bg := context.WithoutCancel(ctx)
	cancelled := true
	if _, cerr := s.Control(bg, Principal{Owner: true}, id, ActCancel); cerr != nil {
		cancelled = false
		var e *Error
		if !errors.As(cerr, &e) || e.Code != CodeInvalidTransition {
			s.log.Warn("cancel the job of a stopped agent step", "job", id, "err", cerr)
		} else if job, rerr := s.getJob(bg, s.db.Reader(), Principal{Owner: true}, id); rerr == nil && job.State == StateSucceeded {
			// It succeeded just before it could be cancelled: that is
			// the step's outcome, not a timeout.
			return a.result(bg, t, job), nil
		}
	}
	if ctx.Err() == nil {
		return res, err // the job could not be read or its attempt recorded
	}
	res.Status, res.Code, res.Message = string(StateCancelled), "AGENT_CANCELLED", "the agent step was stopped"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		res.Code, res.Message = "AGENT_TIMEOUT", "the agent step's deadline passed"
	}
	if cancelled {
		res.Message += "; its job was cancelled"
	}
	return res, nil
}

// agentProfile maps an agent step's provider to a bridge profile: a
// profile of that name, else the first profile (default first, then by
// name) whose provider has that name (claude, codex, command, echo).
func (s *Service) agentProfile(provider string) (string, bool) {
	if provider == "" {
		provider = "default"
	}
	if _, ok := s.profiles[provider]; ok {
		return provider, true
	}
	for _, name := range s.profileNames() {
		if s.profiles[name].provider.Name() == provider {
			return name, true
		}
	}
	return "", false
}

// agentPrompt renders an agent step as one prompt: its instructions, the
// answer format when it declares an output schema, then its prompt.
func agentPrompt(spec kernel.AgentSpec) string {
	var b strings.Builder
	if spec.Instructions != "" {
		b.WriteString("Instructions:\n" + spec.Instructions + "\n\n")
	}
	if len(spec.Output) > 0 {
		b.WriteString("Answer with one JSON object, and nothing else, that matches this JSON Schema:\n" + string(spec.Output) + "\n\n")
	}
	b.WriteString(spec.Prompt)
	return b.String()
}

// submit creates the job of t's operation, or answers the job an earlier
// attempt created. An earlier job that failed, was cancelled or was
// interrupted is retried (a new attempt of the same job) when t is a new
// attempt of the step; one that succeeded answers its result again. On
// error the id is the earlier job's, which exists and may run again, or
// empty when nothing was committed.
func (a *WorkflowAgents) submit(ctx context.Context, t engine.AgentTask, profile, prompt string) (string, error) {
	s := a.s
	var id, task string
	created := false
	err := s.write(ctx, func(tx *sql.Tx, ev *pending) error {
		id, task, created = "", "", false
		var found bool
		var err error
		if id, task, found, err = agentJobOf(ctx, tx, t.OperationKey); found || err != nil {
			return err
		}
		meta := map[string]string{"workflowRunId": t.RunID, "operationKey": t.OperationKey}
		if t.Spec.Model != "" {
			meta[metaModel] = t.Spec.Model
		}
		if t.Spec.MaxTurns > 0 {
			meta[metaMaxTurns] = strconv.Itoa(t.Spec.MaxTurns)
		}
		job, err := s.insertJob(tx, ev, Principal{Client: PlatformClient, Profiles: []string{"*"}}, newJob{
			Profile: profile, Prompt: prompt, Source: SourceWorkflow, Metadata: meta})
		if err != nil {
			return err
		}
		id, task, created = job.ID, t.TaskID, true
		return insertAgentJob(ctx, tx, t.OperationKey, job.ID, t.RunID, t.TaskID, s.now())
	})
	if err != nil {
		if created {
			id = "" // rolled back with the transaction
		}
		return id, fmt.Errorf("bridge: submit the agent job: %w", err)
	}
	if created {
		s.sched.kick()
		return id, nil
	}
	if task == t.TaskID {
		return id, nil // the same attempt: wait for its job
	}
	job, err := s.getJob(ctx, s.db.Reader(), Principal{Owner: true}, id)
	if err != nil {
		return id, err
	}
	switch job.State {
	case StateFailed, StateCancelled, StateInterrupted:
		if _, err := s.Control(ctx, Principal{Owner: true}, id, ActRetry); err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidTransition {
				return id, err
			}
		}
	}
	if err := s.setAgentJobTask(ctx, t.OperationKey, t.TaskID); err != nil {
		return id, fmt.Errorf("bridge: record the agent step attempt: %w", err)
	}
	return id, nil
}

// agentWaitReadFailures is how many reads of its job in a row a waiting
// step lets fail before it gives up on the job.
const agentWaitReadFailures = 10

// wait blocks until job id is terminal (a paused job is waited for), ctx
// ends or the bridge stops. A job read as ended is answered even when ctx
// has just ended. No such job ends the wait at once; other failed reads
// (say, a busy database) are retried at each poll, up to
// agentWaitReadFailures in a row, since giving up cancels a job that may
// still run.
func (a *WorkflowAgents) wait(ctx context.Context, id string) (Job, error) {
	s := a.s
	jw, leave := s.waiters.join(id)
	defer leave()
	poll := time.NewTicker(agentWaitPoll)
	defer poll.Stop()
	seen, failed := 0, 0
	for {
		chunks, _, _, changed := jw.since(seen)
		seen += len(chunks)
		job, err := s.getJob(ctx, s.db.Reader(), Principal{Owner: true}, id)
		var coded *Error
		switch {
		case err == nil && job.State.Terminal():
			return job, nil
		case ctx.Err() != nil:
			return job, ctx.Err()
		case errors.As(err, &coded):
			return job, err // no such job: nothing to wait for
		case err != nil:
			if failed++; failed >= agentWaitReadFailures {
				return job, fmt.Errorf("bridge: read the job %d times in a row: %w", failed, err)
			}
			if failed == 1 {
				s.log.Warn("read the job of an agent step", "job", id, "err", err)
			}
		default:
			failed = 0
		}
		select {
		case <-ctx.Done():
			return job, ctx.Err()
		case <-s.stopped:
			return job, errors.New("bridge: the daemon is stopping")
		case <-changed:
		case <-poll.C:
		}
	}
}

// result maps a terminal job to the step's outcome.
func (a *WorkflowAgents) result(ctx context.Context, t engine.AgentTask, job Job) engine.AgentResult {
	res := engine.AgentResult{JobID: job.ID, Status: string(job.State)}
	switch job.State {
	case StateSucceeded:
	case StateCancelled:
		res.Code, res.Message = "AGENT_CANCELLED", "the agent's job was cancelled"
		return res
	case StateInterrupted:
		res.Code, res.Message = "AGENT_INTERRUPTED", "the daemon stopped while the agent's job ran"
		return res
	default:
		res.Code, res.Message = "AGENT_FAILED", "the agent's job failed"
		if job.LastError != nil {
			res.Code, res.Message = strings.ToUpper(job.LastError.Code), job.LastError.Message
		}
		return res
	}
	text := job.resultText
	var out json.RawMessage
	if len(t.Spec.Output) > 0 {
		obj, ok := answerObject(text)
		if !ok {
			res.Code, res.Message = "AGENT_OUTPUT_INVALID", "the agent's answer holds no JSON object; the step declares an output schema: "+excerpt(text, 200)
			return res
		}
		out = obj
	} else {
		b, err := json.Marshal(text)
		if err != nil {
			res.Code, res.Message = "AGENT_OUTPUT_INVALID", err.Error()
			return res
		}
		out = b
	}
	if a.check != nil {
		if err := a.check(ctx, t, out); err != nil {
			res.Code, res.Message = "AGENT_OUTPUT_INVALID", "the step refuses the agent's answer: "+err.Error()
			return res
		}
	}
	res.Succeeded, res.Output = true, out
	return res
}

// maxAnswerCandidates bounds how many '{' positions answerObject tries.
const maxAnswerCandidates = 256

// answerObject finds the JSON object an agent answered: the whole answer,
// else the last fenced code block that is one, else the last top-level
// object in the text. It answers the object compacted.
func answerObject(text string) (json.RawMessage, bool) {
	if obj, ok := asObject(strings.TrimSpace(text)); ok {
		return obj, true
	}
	blocks := strings.Split(text, "```")
	for i := len(blocks) - 2; i >= 1; i -= 2 { // odd indexes are inside fences
		body := blocks[i]
		if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.Contains(body[:nl], "{") {
			body = body[nl+1:] // drop the info string ("json")
		}
		if obj, ok := asObject(strings.TrimSpace(body)); ok {
			return obj, true
		}
	}
	var last json.RawMessage
	tries := 0
	for i := strings.IndexByte(text, '{'); i >= 0 && tries < maxAnswerCandidates; tries++ {
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		var v json.RawMessage
		next := i + 1
		if dec.Decode(&v) == nil && len(v) > 0 && v[0] == '{' {
			last = v
			next = i + int(dec.InputOffset())
		}
		j := strings.IndexByte(text[next:], '{')
		if j < 0 {
			break
		}
		i = next + j
	}
	if last == nil {
		return nil, false
	}
	return asObject(string(last))
}

// asObject answers s compacted when it is exactly one JSON object.
func asObject(s string) (json.RawMessage, bool) {
	if !strings.HasPrefix(s, "{") || !json.Valid([]byte(s)) {
		return nil, false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return nil, false
	}
	return b.Bytes(), true
}
