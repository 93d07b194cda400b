package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/platform/lang"
)

// Program is a loaded workflow with what the simulator needs besides the
// kernel program: the node table (for mock keys and breakpoints), the
// referenced definitions' input schemas (a mocked call whose request
// violates its action's input schema fails the session) and where values
// hold secrets.
type Program struct {
	kp      *kernel.Program
	entry   string
	nodes   map[string]nodeInfo
	order   []string
	refs    map[string]string // mock key "action:acme/greet@1" → kind
	inputs  map[string]*jsonschema.Schema
	secrets kernel.Secrets
	tools   map[string]bool
}

type nodeInfo struct {
	Kind string
	Ref  string
	// Tools are an agent step's tools (action references).
	Tools map[string]bool
}

// artifactView is the part of a workflow artifact the simulator reads
// (docs/workflow-language.md, "The artifact").
type artifactView struct {
	Entry      *string `json:"entry"`
	References map[string]struct {
		Kind               string `json:"kind"`
		ID                 string `json:"id"`
		Version            int    `json:"version"`
		PublishedVersionID string `json:"publishedVersionId"`
	} `json:"references"`
	Nodes []struct {
		ID    string  `json:"id"`
		Kind  string  `json:"kind"`
		Ref   *string `json:"ref"`
		Agent *struct {
			Tools []string `json:"tools"`
		} `json:"agent"`
	} `json:"nodes"`
}

// Reference is one definition an artifact references, as the simulator
// must resolve it: its key in the artifact's references and its published
// version id.
type Reference struct {
	Key                string
	Kind, ID           string
	Version            int
	PublishedVersionID string
}

// References lists what artifact references, in key order.
func References(artifact []byte) ([]Reference, error) {
	var av artifactView
	if err := json.Unmarshal(artifact, &av); err != nil {
		return nil, refuse(CodeRequest, "/artifact", "the artifact is not a workflow artifact: %v", err)
	}
	out := make([]Reference, 0, len(av.References))
	for k, r := range av.References {
		out = append(out, Reference{Key: k, Kind: r.Kind, ID: r.ID, Version: r.Version, PublishedVersionID: r.PublishedVersionID})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// LoadProgram loads artifact with the catalog lock it was compiled against
// and the referenced definition artifacts (decision tables required,
// actions optional). A refusal is PF-DEBUG-REQUEST.
func LoadProgram(artifact []byte, lock *lang.CatalogLock, defs [][]byte) (*Program, error) {
	var opts []kernel.Option
	if lock != nil {
		opts = append(opts, kernel.WithCatalog(lock))
	}
	if len(defs) > 0 {
		opts = append(opts, kernel.WithDefinitions(defs...))
	}
	kp, err := kernel.Load(artifact, opts...)
	if err != nil {
		return nil, refuse(CodeRequest, "/artifact", "the artifact cannot be simulated: %v", err)
	}
	var av artifactView
	if err := json.Unmarshal(artifact, &av); err != nil {
		return nil, refuse(CodeRequest, "/artifact", "the artifact is not a workflow artifact: %v", err)
	}
	p := &Program{kp: kp, nodes: map[string]nodeInfo{}, refs: map[string]string{}, inputs: map[string]*jsonschema.Schema{},
		secrets: kp.Secrets(), tools: map[string]bool{}}
	if av.Entry != nil {
		p.entry = *av.Entry
	}
	for _, n := range av.Nodes {
		ni := nodeInfo{Kind: n.Kind}
		if n.Ref != nil {
			ni.Ref = *n.Ref
		}
		if n.Agent != nil {
			ni.Tools = map[string]bool{}
			for _, t := range n.Agent.Tools {
				p.tools[t] = true
				ni.Tools[t] = true
			}
		}
		p.nodes[n.ID] = ni
		p.order = append(p.order, n.ID)
	}
	for k, r := range av.References {
		p.refs[k] = r.Kind
	}
	if lock != nil {
		for _, e := range lock.Definitions {
			if e.Kind != lang.KindAction || len(e.InputSchema) == 0 || string(e.InputSchema) == "null" {
				continue
			}
			key := fmt.Sprintf("action:%s@%d", e.ID, e.Version)
			if _, ok := p.refs[key]; !ok {
				continue
			}
			sch, err := compileSchema(key, e.InputSchema)
			if err != nil {
				return nil, refuse(CodeRequest, "/artifact", "the input schema of %s: %v", key, err)
			}
			p.inputs[key] = sch
		}
	}
	return p, nil
}

// Kernel is the loaded kernel program.
func (p *Program) Kernel() *kernel.Program { return p.kp }

// acceptAny resolves references to shared catalog schemas as "anything":
// the kernel checks outputs in full; the input check here is a courtesy.
type acceptAny struct{}

func (acceptAny) Load(string) (any, error) { return map[string]any{}, nil }

func compileSchema(label string, raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	url := "mem://sim/" + strings.NewReplacer("/", "_", ":", "_", "@", "_").Replace(label) + ".json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(acceptAny{})
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// checkRequest validates a mocked call's input against its action's input
// schema.
func (p *Program) checkRequest(ref string, input json.RawMessage) error {
	sch := p.inputs["action:"+ref]
	if sch == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}
