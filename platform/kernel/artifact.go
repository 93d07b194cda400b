package kernel

import "encoding/json"

// The artifact layout of docs/workflow-language.md ("The artifact"), as far
// as the kernel reads it. Templates, schemas and tables stay raw JSON until
// Load compiles them.

type artWorkflow struct {
	Format      string            `json:"format"`
	Kind        string            `json:"kind"`
	ID          string            `json:"id"`
	Version     int               `json:"version"`
	Partial     bool              `json:"partial"`
	Input       json.RawMessage   `json:"input"`
	Output      json.RawMessage   `json:"output"`
	Secrets     artSecrets        `json:"secrets"`
	Vars        []artVar          `json:"vars"`
	TimeoutMs   *int64            `json:"timeoutMs"`
	Entry       *string           `json:"entry"`
	Result      json.RawMessage   `json:"result"`
	References  map[string]artRef `json:"references"`
	Expressions artExpressions    `json:"expressions"`
	Nodes       []artNode         `json:"nodes"`
}

type artSecrets struct {
	Input  []string `json:"input"`
	Output []string `json:"output"`
}

type artVar struct {
	Name    string          `json:"name"`
	Schema  json.RawMessage `json:"schema"`
	Default json.RawMessage `json:"default"`
}

type artRef struct {
	Kind               string `json:"kind"`
	ID                 string `json:"id"`
	Version            int    `json:"version"`
	Resolved           bool   `json:"resolved"`
	PublishedVersionID string `json:"publishedVersionId"`
	Digest             string `json:"digest"`
	SideEffect         string `json:"sideEffect"`
}

type artExpressions struct {
	Language  string   `json:"language"`
	Libraries []string `json:"libraries"`
	CostLimit int64    `json:"costLimit"`
	Variables []string `json:"variables"`
}

type artRetry struct {
	MaxAttempts        int      `json:"maxAttempts"`
	InitialIntervalMs  int64    `json:"initialIntervalMs"`
	BackoffCoefficient float64  `json:"backoffCoefficient"`
	MaxIntervalMs      int64    `json:"maxIntervalMs"`
	NonRetryable       []string `json:"nonRetryable"`
}

type artNode struct {
	ID     string  `json:"id"`
	Kind   string  `json:"kind"`
	Title  *string `json:"title"`
	Parent *string `json:"parent"`
	Branch *string `json:"branch"`
	Next   *string `json:"next"`

	// action, decision, workflow
	Ref            *string         `json:"ref"`
	With           json.RawMessage `json:"with"`
	SideEffect     string          `json:"sideEffect"`
	RetrySafe      bool            `json:"retrySafe"`
	TimeoutMs      *int64          `json:"timeoutMs"`
	DeadlineMs     *int64          `json:"deadlineMs"`
	Retry          *artRetry       `json:"retry"`
	IdempotencyKey json.RawMessage `json:"idempotencyKey"`
	Table          json.RawMessage `json:"table"`

	// wait
	Duration json.RawMessage `json:"duration"`

	// signal, human
	Signal    string          `json:"signal"`
	Schema    json.RawMessage `json:"schema"`
	OnTimeout *struct {
		Next *string `json:"next"`
	} `json:"onTimeout"`
	Human *artHuman `json:"human"`

	// agent
	Agent *artAgent `json:"agent"`

	// forEach
	Items       json.RawMessage `json:"items"`
	As          string          `json:"as"`
	Index       string          `json:"index"`
	Concurrency int             `json:"concurrency"`
	Body        *string         `json:"body"`
	Collect     json.RawMessage `json:"collect"`

	// parallel
	Branches []struct {
		Name  string  `json:"name"`
		Entry *string `json:"entry"`
	} `json:"branches"`

	// switch
	Cases []struct {
		When json.RawMessage `json:"when"`
		Next *string         `json:"next"`
	} `json:"cases"`
	Default *string `json:"default"`

	// set
	Assign []struct {
		Var   string          `json:"var"`
		Value json.RawMessage `json:"value"`
	} `json:"assign"`

	// fail
	Code    string          `json:"code"`
	Message json.RawMessage `json:"message"`

	// succeed
	Result json.RawMessage `json:"result"`
}

type artHuman struct {
	Title       json.RawMessage `json:"title"`
	Description json.RawMessage `json:"description"`
	Assignees   json.RawMessage `json:"assignees"`
	Form        json.RawMessage `json:"form"`
	Decisions   []string        `json:"decisions"`
}

type artAgent struct {
	Provider     string          `json:"provider"`
	Model        *string         `json:"model"`
	Instructions *string         `json:"instructions"`
	Prompt       json.RawMessage `json:"prompt"`
	Tools        []string        `json:"tools"`
	Output       json.RawMessage `json:"output"`
	MaxTurns     int             `json:"maxTurns"`
}

// artDefinition is a referenced definition's artifact (action or decision
// table) given to Load with WithDefinitions.
type artDefinition struct {
	Format  string          `json:"format"`
	Kind    string          `json:"kind"`
	ID      string          `json:"id"`
	Version int             `json:"version"`
	Partial bool            `json:"partial"`
	Binding json.RawMessage `json:"binding"`
	Table   json.RawMessage `json:"table"`
	Output  json.RawMessage `json:"output"`
	// An action's pins, read when it is an agent step's tool.
	Input      json.RawMessage `json:"input"`
	SideEffect string          `json:"sideEffect"`
	TimeoutMs  int64           `json:"timeoutMs"`
	Retry      *artRetry       `json:"retry"`
}
