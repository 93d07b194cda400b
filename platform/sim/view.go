package sim

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
)

// View is what a session shows (docs/platform-api.md, "Debug view").
type View struct {
	Status Status `json:"status"`
	// SelectedNode is the node the next next enters (null when none is
	// queued).
	SelectedNode *string `json:"selected_node"`
	// ActiveNodes have a live step instance (running, waiting or queued).
	ActiveNodes []string `json:"active_nodes"`
	// CurrentNodes are queued to be entered, in the kernel's order.
	CurrentNodes []string     `json:"current_nodes"`
	Variables    Variables    `json:"variables"`
	Breakpoints  []string     `json:"breakpoints"`
	Diagnostics  []Diagnostic `json:"diagnostics"`
	Events       []EventView  `json:"events"`
	// Boundary is where the session stands; Boundaries are those the last
	// command crossed.
	Boundary   *Boundary  `json:"boundary"`
	Boundaries []Boundary `json:"boundaries"`
	// Now is the virtual time.
	Now time.Time `json:"now"`
}

// Variables are the run's values: its input, workflow variables, step
// outputs (by instance key) and, once it ended, its output or error.
type Variables struct {
	Input  json.RawMessage            `json:"input"`
	Vars   map[string]json.RawMessage `json:"vars"`
	Steps  map[string]json.RawMessage `json:"steps"`
	Output json.RawMessage            `json:"output"`
	Error  *kernel.RunError           `json:"error,omitempty"`
}

// View computes the session's view.
func (s *Session) View() View {
	st := s.State
	v := View{Status: s.Status, ActiveNodes: []string{}, CurrentNodes: []string{}, Breakpoints: s.Breakpoints,
		Diagnostics: s.Diagnostics, Events: s.Events, Boundary: s.Boundary, Boundaries: s.Crossed, Now: s.Now.UTC()}
	if v.Breakpoints == nil {
		v.Breakpoints = []string{}
	}
	if v.Diagnostics == nil {
		v.Diagnostics = []Diagnostic{}
	}
	if v.Events == nil {
		v.Events = []EventView{}
	}
	if v.Boundaries == nil {
		v.Boundaries = []Boundary{}
	}
	seen := map[string]bool{}
	for _, tok := range st.Tokens {
		if !seen[tok.Node] {
			seen[tok.Node] = true
			v.ActiveNodes = append(v.ActiveNodes, tok.Node)
		}
	}
	sort.Strings(v.ActiveNodes)
	for _, id := range st.Ready {
		if tok := st.Tokens[id]; tok != nil && tok.Phase == kernel.PhaseEnter {
			v.CurrentNodes = append(v.CurrentNodes, tok.Node)
		}
	}
	if len(v.CurrentNodes) > 0 && !s.Status.Ended() {
		n := v.CurrentNodes[0]
		v.SelectedNode = &n
	}
	v.Variables = Variables{Input: st.Input, Vars: st.Vars, Steps: map[string]json.RawMessage{}, Output: st.Output, Error: st.Error}
	if v.Variables.Input == nil {
		v.Variables.Input = s.Input
	}
	if v.Variables.Vars == nil {
		v.Variables.Vars = map[string]json.RawMessage{}
	}
	if v.Variables.Output == nil {
		v.Variables.Output = json.RawMessage("null")
	}
	for _, sc := range st.Scopes {
		for node, out := range sc.Outputs {
			v.Variables.Steps[node+sc.Suffix] = out
		}
	}
	return v
}
