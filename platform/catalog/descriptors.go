package catalog

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"

	"github.com/agentbridge/bridge/platform/lang"
)

//go:embed connectors/*.yaml
var connectorsFS embed.FS

// descriptor is an installed adapter's manifest, compiled once.
type descriptor struct {
	ConnectorDescriptor
}

// connectorArtifact is the part of a connector artifact a descriptor shows.
type connectorArtifact struct {
	ID           string          `json:"id"`
	Version      int             `json:"version"`
	Title        *string         `json:"title"`
	Adapter      string          `json:"adapter"`
	Capabilities []string        `json:"capabilities"`
	Connection   json.RawMessage `json:"connection"`
	Actions      []struct {
		Name       string          `json:"name"`
		Title      *string         `json:"title"`
		SideEffect string          `json:"sideEffect"`
		Input      json.RawMessage `json:"input"`
		Output     json.RawMessage `json:"output"`
	} `json:"actions"`
}

// loadDescriptors compiles the embedded manifests of the built-in and
// installed adapters, sorted by adapter.
func loadDescriptors() ([]descriptor, error) {
	names, err := fs.Glob(connectorsFS, "connectors/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("catalog: connector manifests: %w", err)
	}
	lock := baseLock()
	var out []descriptor
	for _, name := range names {
		src, err := connectorsFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("catalog: connector manifest %s: %w", name, err)
		}
		res := lang.Compile(src, lang.Options{Filename: name, Catalog: lock})
		if !res.OK {
			return nil, fmt.Errorf("catalog: connector manifest %s does not compile: %v", name, res.Diagnostics)
		}
		var a connectorArtifact
		if err := json.Unmarshal(res.Artifact, &a); err != nil {
			return nil, fmt.Errorf("catalog: connector manifest %s: %w", name, err)
		}
		d := ConnectorDescriptor{Adapter: a.Adapter, BuiltIn: a.Adapter == "http", DefinitionID: a.ID, Version: a.Version,
			Source: string(src), Digest: res.Digest, Capabilities: a.Capabilities, Bindings: []string{"adapter", "connector"},
			Connection: schemaOrNull(a.Connection), Actions: []DescriptorAction{}, Published: []VersionSummary{}}
		if a.Title != nil {
			d.Title = *a.Title
		}
		for _, op := range a.Actions {
			d.Actions = append(d.Actions, DescriptorAction{Name: op.Name, Title: op.Title, SideEffect: op.SideEffect,
				InputSchema: schemaOrNull(op.Input), OutputSchema: schemaOrNull(op.Output)})
		}
		out = append(out, descriptor{d})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Adapter < out[j].Adapter })
	return out, nil
}

func schemaOrNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// withPublications completes a descriptor with the project's connector
// versions on its adapter (connectors are listed in id order).
func (d descriptor) withPublications(connectors []Version) (ConnectorDescriptor, error) {
	out := d.ConnectorDescriptor
	out.Published = []VersionSummary{}
	out.Actions = append([]DescriptorAction(nil), d.Actions...)
	for _, v := range connectors {
		e, _, err := entryOf(v)
		if err != nil {
			return out, fmt.Errorf("catalog: published version %s: %w", v.ID, err)
		}
		if e.Adapter != d.Adapter {
			continue
		}
		out.Published = append(out.Published, v.summary())
		if v.DefinitionID == d.DefinitionID && v.Version == d.Version && v.Digest == d.Digest {
			id := v.ID
			out.PublishedVersionID = &id
		}
	}
	return out, nil
}

// adapterNames lists the adapters of the descriptors.
func adapterNames(ds []descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Adapter
	}
	return out
}
