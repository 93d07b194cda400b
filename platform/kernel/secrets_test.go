package kernel

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"
)

func TestSchemaSecretPointers(t *testing.T) {
	for name, tc := range map[string]struct {
		schema string
		want   []string
	}{
		"none":       {`{"type":"object","properties":{"a":{"type":"string"}}}`, nil},
		"no schema":  {`null`, nil},
		"whole":      {`{"type":"string","x-secret":true}`, []string{""}},
		"write only": {`{"type":"object","properties":{"pw":{"type":"string","writeOnly":true}}}`, []string{"/pw"}},
		"nested and escaped": {`{"type":"object","properties":{"b":{"type":"object","properties":{"k/~":{"x-secret":true}}},"a":{"x-secret":true}}}`,
			[]string{"/a", "/b/k~1~0"}},
		"items and members": {`{"type":"object","properties":{"list":{"type":"array","items":{"type":"object","properties":{"t":{"x-secret":true}}}},` +
			`"map":{"type":"object","additionalProperties":{"x-secret":true}}}}`, []string{"/list/*/t", "/map/*"}},
		"reference": {`{"$defs":{"tok":{"type":"string","x-secret":true}},"type":"object","properties":{"t":{"$ref":"#/$defs/tok"}}}`,
			[]string{"/t"}},
		"recursive": {`{"$defs":{"node":{"type":"object","properties":{"key":{"x-secret":true},"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node"}`,
			[]string{"/key", "/next"}},
		"recursive without secrets": {`{"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node"}`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			sc, err := newSchemaSet().add(json.RawMessage(tc.schema), name)
			is.NoErr(err)
			is.Equal(sc.secretPointers(), tc.want)
		})
	}
}

const secretsWF = `kind: workflow
id: t/secrets
version: 1
input:
  type: object
  properties:
    key: {type: string, x-secret: true}
output:
  type: object
  properties:
    token: {type: string, x-secret: true}
vars:
  token: {type: string, x-secret: true}
  count: {type: integer, default: 0}
steps:
  - id: get
    action: t/fetch@1
  - id: login
    signal: login
    schema:
      type: object
      properties:
        password: {type: string, x-secret: true}
  - id: review
    human:
      title: Review
      assignees: [ops]
      form:
        type: object
        properties:
          pin: {type: string, writeOnly: true}
          note: {type: string}
      decisions: [ok]
  - id: done
    succeed:
      result: {token: =vars.token}
`

func TestProgramSecrets(t *testing.T) {
	is := is.New(t)
	s := load(t, secretsWF).Secrets()
	is.Equal(s.Input, []string{"/key"})
	is.Equal(s.Output, []string{"/token"})
	is.Equal(s.Vars, map[string][]string{"token": {""}})
	is.Equal(s.Steps, map[string][]string{}) // t/fetch's output holds no secret
	is.Equal(s.Forms, map[string][]string{"review": {"/pin"}})
	is.Equal(s.Signals, map[string][]string{"login": {"/password"}})
}

// A wholly secret output, and a secret under a recursive reference of the
// input, are found (the compiler's artifact lists miss both).
func TestProgramSecretsWholeAndRecursive(t *testing.T) {
	is := is.New(t)
	s := load(t, `kind: workflow
id: t/whole
input:
  $defs:
    node:
      type: object
      properties:
        key: {type: string, x-secret: true}
        next: {$ref: "#/$defs/node"}
  $ref: "#/$defs/node"
output: {type: string, x-secret: true}
steps:
  - id: done
    succeed:
      result: =input.key
`).Secrets()
	is.Equal(s.Input, []string{"/key", "/next"})
	is.Equal(s.Output, []string{""})
}

// An agent step's pinned tools contribute their schemas' pointers, by tool
// reference.
func TestProgramSecretsAgentTools(t *testing.T) {
	is := is.New(t)
	s := load(t, `kind: workflow
id: t/agent-vault
steps:
  - id: look
    agent:
      provider: claude
      prompt: Look it up.
      tools: [t/vault@1, t/fetch@1]
    timeout: 5m
result: =steps.look.output
`).Secrets()
	is.Equal(s.ToolInputs, map[string][]string{"t/vault@1": {"/apiKey"}})
	is.Equal(s.ToolOutputs, map[string][]string{"t/vault@1": {"/token"}})
	is.Equal(s.Steps, map[string][]string{}) // the agent's own output holds none
}
