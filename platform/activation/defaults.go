package activation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/agentbridge/bridge/platform/api"
)

// CodeSecretValue is 422 for a secret-marked value in the input defaults
// (docs/platform-api.md, "Errors").
const CodeSecretValue = "PF-SCHEMA-SECRET_VALUE"

// maxSchemaDiagnostics caps the diagnostics of a schema violation.
const maxSchemaDiagnostics = 20

// workflowInput is what the defaults check reads from a workflow artifact.
type workflowInput struct {
	Input   json.RawMessage `json:"input"`
	Secrets struct {
		Input []string `json:"input"`
	} `json:"secrets"`
}

// checkDefaults checks input defaults (a compact JSON object) against the
// input schema of a workflow artifact. Defaults are a partial input: the
// root schema's required list is not applied, everything else is (types,
// nested required, closed objects, ...). References to shared catalog
// schemas are not followed (they accept any value here; a run's input is
// checked in full when it starts). A value at a secret-marked location is
// refused: secrets come from connections, never from stored defaults.
func checkDefaults(defaults, artifact json.RawMessage) error {
	var wi workflowInput
	if err := json.Unmarshal(artifact, &wi); err != nil {
		return fmt.Errorf("activation: read workflow artifact: %w", err)
	}
	val, err := jsonschema.UnmarshalJSON(bytes.NewReader(defaults))
	if err != nil {
		return api.Invalid("/input_defaults", "input_defaults must be a JSON object")
	}
	for _, p := range wi.Secrets.Input {
		if loc, ok := secretAt(val, p); ok {
			return &api.Error{Code: CodeSecretValue,
				Message:     "input_defaults holds a value the workflow's input schema marks secret",
				Diagnostics: []api.Diagnostic{{Code: "secret_value", Path: "/input_defaults" + loc, Message: "secret values cannot be stored as defaults"}}}
		}
	}
	raw := bytes.TrimSpace(wi.Input)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("activation: read workflow input schema: %w", err)
	}
	if m, ok := doc.(map[string]any); ok {
		partial := make(map[string]any, len(m))
		for k, v := range m {
			if k != "required" {
				partial[k] = v
			}
		}
		doc = partial
	}
	const url = "mem://activation/input.json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(acceptAnyLoader{})
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("activation: workflow input schema: %w", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("activation: compile workflow input schema: %w", err)
	}
	err = sch.Validate(val)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return fmt.Errorf("activation: validate input defaults: %w", err)
	}
	p := message.NewPrinter(language.English)
	e := &api.Error{Code: api.CodeValidation,
		Message: "input_defaults does not match the workflow's input schema"}
	for _, leaf := range leaves(ve) {
		if len(e.Diagnostics) == maxSchemaDiagnostics {
			break
		}
		e.Diagnostics = append(e.Diagnostics, api.Diagnostic{Code: "schema", Path: "/input_defaults" + pointer(leaf.InstanceLocation),
			Message: leaf.ErrorKind.LocalizedString(p)})
	}
	return e
}

// acceptAnyLoader resolves every external reference to the schema true.
type acceptAnyLoader struct{}

func (acceptAnyLoader) Load(string) (any, error) { return true, nil }

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func pointer(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString("/" + escapePointer(s))
	}
	return b.String()
}

// secretAt reports the location of a value of doc at the secret pointer p
// ("/" is the whole input; "*" matches any member or element).
func secretAt(doc any, p string) (string, bool) {
	if p == "/" {
		return "", true
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return walkSecret(doc, segs, "")
}

func walkSecret(v any, segs []string, at string) (string, bool) {
	if len(segs) == 0 {
		return at, true
	}
	switch n := v.(type) {
	case map[string]any:
		if segs[0] == "*" {
			for k, child := range n {
				if loc, ok := walkSecret(child, segs[1:], at+"/"+escapePointer(k)); ok {
					return loc, true
				}
			}
			return "", false
		}
		child, ok := n[segs[0]]
		if !ok {
			return "", false
		}
		return walkSecret(child, segs[1:], at+"/"+escapePointer(segs[0]))
	case []any:
		if segs[0] != "*" {
			return "", false
		}
		for i, child := range n {
			if loc, ok := walkSecret(child, segs[1:], fmt.Sprintf("%s/%d", at, i)); ok {
				return loc, true
			}
		}
	}
	return "", false
}
