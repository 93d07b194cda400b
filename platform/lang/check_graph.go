package lang

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// bitset is a set of step indices.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) has(i int) bool {
	w := i / 64
	return i >= 0 && w < len(b) && b[w]&(1<<(uint(i)%64)) != 0
}

func (b bitset) set(i int) {
	if w := i / 64; i >= 0 && w < len(b) {
		b[w] |= 1 << (uint(i) % 64)
	}
}

func (b bitset) or(o bitset) {
	for i := range b {
		if i < len(o) {
			b[i] |= o[i]
		}
	}
}

func (b bitset) clone() bitset { return append(bitset(nil), b...) }

// stepTable indexes every step of a workflow in document (pre-order) order.
type stepTable struct {
	all   []*Step
	byID  map[string]int // first step with the id
	index map[*Step]int
}

func (c *compiler) collectSteps(steps []*Step) *stepTable {
	t := &stepTable{byID: map[string]int{}, index: map[*Step]int{}}
	var walk func(list []*Step)
	walk = func(list []*Step) {
		for _, st := range list {
			t.index[st] = len(t.all)
			t.all = append(t.all, st)
			if st.ID != "" {
				if first, dup := t.byID[st.ID]; dup {
					c.diags.errorf(CodeDuplicateID, c.src.rangeOf(st.IDNode), joinPath(st.Path, "id"),
						"step id %q is already used by the step at line %d", st.ID, t.all[first].IDNode.Line)
				} else {
					t.byID[st.ID] = t.index[st]
				}
			}
			walk(st.Body)
			names := map[string]*yaml.Node{}
			for _, b := range st.Branches {
				if b.Name != "" {
					if first, dup := names[b.Name]; dup {
						c.diags.errorf(CodeDuplicateID, c.src.rangeOf(b.NameNode), joinPath(b.Path, "name"),
							"branch name %q is already used at line %d", b.Name, first.Line)
					}
					names[b.Name] = b.NameNode
				}
				walk(b.Steps)
			}
		}
	}
	walk(steps)
	return t
}

// edge is a possible transition; node is the source text that asked for it
// (nil for falling through to the following step).
type edge struct {
	to   int
	node *yaml.Node
	path string
}

// flow holds the results of the graph analysis.
type flow struct {
	// next is the resolved continuation of each step (step id, or "" for the
	// end of its step list); switch defaults are resolved the same way.
	next map[*Step]*string
	// targets resolves every Target to a step id, or "" for the end.
	targets map[*Target]*string
	// visible is, per step, the steps whose outputs exist when it starts.
	visible map[*Step]bitset
	// endVisible is, per step list (keyed by its container, nil for the
	// top level), the steps whose outputs exist when the list ends.
	endVisible map[*Step]bitset
	// endReachable tells whether the top-level list can end normally.
	endReachable bool
}

// analyzeFlow checks targets, reachability and cycles of every step list and
// computes which step outputs are visible where.
func (c *compiler) analyzeFlow(t *stepTable, top []*Step) *flow {
	f := &flow{next: map[*Step]*string{}, targets: map[*Target]*string{}, visible: map[*Step]bitset{}, endVisible: map[*Step]bitset{}}
	c.analyzeList(t, f, top, nil, newBitset(len(t.all)))
	return f
}

func sameList(a, b []*Step) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}

func (c *compiler) resolveTarget(t *stepTable, f *flow, list []*Step, tg *Target) (int, bool) {
	if tg.Name == "end" {
		s := ""
		f.targets[tg] = &s
		return len(list), true
	}
	idx, ok := t.byID[tg.Name]
	if !ok {
		msg := "no step has the id %q"
		args := []any{tg.Name}
		var ids []string
		if len(list) <= maxSuggestCandidates {
			for _, st := range list {
				ids = append(ids, st.ID)
			}
		}
		if s := suggest(tg.Name, ids); s != "" {
			msg += "; did you mean %q?"
			args = append(args, s)
		}
		c.diags.errorf(CodeUnknownTarget, c.src.rangeOf(tg.YAML), tg.Path, msg, args...)
		return 0, false
	}
	target := t.all[idx]
	if !sameList(target.list, list) {
		c.diags.errorf(CodeTargetScope, c.src.rangeOf(tg.YAML), tg.Path,
			"step %q is in a different step list; a transition stays within its own list (use \"end\" to finish this list)", tg.Name)
		return 0, false
	}
	id := target.ID
	f.targets[tg] = &id
	return target.index, true
}

func (c *compiler) analyzeList(t *stepTable, f *flow, list []*Step, container *Step, outer bitset) {
	n := len(list)
	end := n
	succ := make([][]edge, n)
	for i, st := range list {
		fallthroughTo := i + 1
		add := func(tg *Target) {
			if tg == nil {
				return
			}
			if to, ok := c.resolveTarget(t, f, list, tg); ok {
				succ[i] = append(succ[i], edge{to: to, node: tg.YAML, path: tg.Path})
			}
		}
		contID := func(to int) *string {
			s := ""
			if to < n {
				s = list[to].ID
			}
			return &s
		}
		switch st.Kind {
		case StepFail, StepSucceed, "":
		case StepSwitch:
			for _, cs := range st.Cases {
				add(cs.Next)
			}
			if st.Default != nil {
				add(st.Default)
			} else {
				succ[i] = append(succ[i], edge{to: fallthroughTo})
				f.next[st] = contID(fallthroughTo)
			}
		default:
			if st.Next != nil {
				add(st.Next)
			} else {
				succ[i] = append(succ[i], edge{to: fallthroughTo})
				f.next[st] = contID(fallthroughTo)
			}
			add(st.OnTimeout)
		}
		if st.Next != nil && f.targets[st.Next] != nil {
			f.next[st] = f.targets[st.Next]
		}
		if st.Kind == StepSwitch && st.Default != nil && f.targets[st.Default] != nil {
			f.next[st] = f.targets[st.Default]
		}
	}

	// Reachability from the first step.
	reach := make([]bool, n+1)
	queue := []int{0}
	reach[0] = true
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if u == end {
			continue
		}
		for _, e := range succ[u] {
			if !reach[e.to] {
				reach[e.to] = true
				queue = append(queue, e.to)
			}
		}
	}
	if container == nil {
		f.endReachable = reach[end]
	}
	for i, st := range list {
		if !reach[i] {
			node := st.IDNode
			if node == nil {
				node = st.YAML
			}
			c.diags.warnf(CodeUnreachable, c.src.rangeOf(node), st.Path, "step %q can never run: no transition leads to it", st.ID)
		}
	}

	// Cycles: depth-first search in list order; a back edge closes a cycle.
	const (
		white = iota
		grey
		black
	)
	color := make([]int, n+1)
	back := map[[2]int]bool{}
	var order []int // post-order
	type frame struct{ u, next int }
	stackPos := make([]int, n+1) // position of a grey node on the stack
	for root := 0; root <= n; root++ {
		if color[root] != white {
			continue
		}
		stack := []frame{{root, 0}}
		color[root] = grey
		stackPos[root] = 0
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.u == end || top.next >= len(succ[top.u]) {
				color[top.u] = black
				order = append(order, top.u)
				stack = stack[:len(stack)-1]
				continue
			}
			e := succ[top.u][top.next]
			top.next++
			switch color[e.to] {
			case white:
				color[e.to] = grey
				stackPos[e.to] = len(stack)
				stack = append(stack, frame{e.to, 0})
			case grey:
				back[[2]int{top.u, e.to}] = true
				cycle := stack[stackPos[e.to]:]
				var names []string
				for k, fr := range cycle {
					if len(cycle) > 8 && k == 4 {
						names = append(names, "…")
					}
					if len(cycle) <= 8 || k < 4 || k >= len(cycle)-3 {
						names = append(names, list[fr.u].ID)
					}
				}
				names = append(names, list[e.to].ID)
				c.diags.errorf(CodeCycle, c.src.rangeOf(e.node), e.path,
					"this transition forms a cycle (%s); only forEach repeats steps", strings.Join(names, " → "))
			}
		}
	}

	// Visible outputs: what every predecessor saw, plus the predecessor
	// itself and, for a parallel step, everything its branches ran.
	anc := make([]bitset, n+1)
	for i := range anc {
		anc[i] = outer.clone()
	}
	for k := len(order) - 1; k >= 0; k-- {
		u := order[k]
		if u == end {
			continue
		}
		for _, e := range succ[u] {
			if back[[2]int{u, e.to}] {
				continue
			}
			anc[e.to].or(anc[u])
			anc[e.to].set(t.index[list[u]])
			c.exportBranches(t, list[u], anc[e.to])
		}
	}
	for i, st := range list {
		f.visible[st] = anc[i]
	}
	f.endVisible[container] = anc[end]
	for _, st := range list {
		if len(st.Body) > 0 {
			c.analyzeList(t, f, st.Body, st, anc[st.index])
		}
		for _, b := range st.Branches {
			if len(b.Steps) > 0 {
				c.analyzeList(t, f, b.Steps, st, anc[st.index])
			}
		}
	}
}

// exportBranches adds the steps a parallel step's branches ran: after the
// join their outputs exist. Loop bodies stay private to their iterations.
func (c *compiler) exportBranches(t *stepTable, st *Step, into bitset) {
	for _, b := range st.Branches {
		for _, s := range b.Steps {
			into.set(t.index[s])
			c.exportBranches(t, s, into)
		}
	}
}
