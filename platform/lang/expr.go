package lang

import (
	"fmt"
	"runtime"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	"gopkg.in/yaml.v3"
)

// ExprCostLimit is the CEL runtime cost limit of one expression evaluation.
// Kernels must evaluate with cel.CostLimit(ExprCostLimit); the artifact
// records it too.
const ExprCostLimit = 1_000_000

// exprLibraries names the CEL libraries (and their pinned versions) that
// expressions are checked against; an evaluator must offer the same.
var exprLibraries = []string{"cel-standard", "ext.strings@5", "ext.math@3", "ext.lists@5", "ext.sets@0", "ext.encoders@2", "optional@4", "agentbridge.sum@1"}

// ExprEnvOptions returns the CEL environment options of the expression
// language: the libraries, parser limits and UTC as the default time zone.
// The kernel builds its evaluation environment from the same options (with
// every variable declared dyn), so that checked expressions mean the same
// thing when they run.
func ExprEnvOptions() []cel.EnvOption {
	return []cel.EnvOption{
		ext.Strings(ext.StringsVersion(5)),
		ext.Math(ext.MathVersion(3)),
		ext.Lists(ext.ListsVersion(5)),
		ext.Sets(ext.SetsVersion(0)),
		ext.Encoders(ext.EncodersVersion(2)),
		cel.OptionalTypes(cel.OptionalTypesVersion(4)),
		sumLibrary(),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserRecursionLimit(64),
		cel.ParserExpressionSizeLimit(MaxExpressionLength),
	}
}

// ExprProgramOptions are the program options kernels evaluate with.
func ExprProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{cel.CostLimit(ExprCostLimit), cel.InterruptCheckFrequency(1000)}
}

// isExpr reports whether a node is an expression: a string scalar starting
// with "=" but not "==" (which escapes a literal "=").
func isExpr(n *yaml.Node) bool {
	return isString(n) && strings.HasPrefix(n.Value, "=") && !strings.HasPrefix(n.Value, "==")
}

func exprText(n *yaml.Node) string { return strings.TrimPrefix(n.Value, "=") }

// hasExpr reports whether a subtree contains any expression.
func hasExpr(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.ScalarNode:
		return isExpr(n)
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			if hasExpr(n.Content[i]) {
				return true
			}
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if hasExpr(c) {
				return true
			}
		}
	}
	return false
}

// exprCtx is where an expression is evaluated: its environment and the steps
// whose outputs exist there.
type exprCtx struct {
	env     *cel.Env
	visible bitset // nil: the environment has no steps variable
	steps   *stepTable
	what    string // e.g. "step charge"
}

// exprJob is one expression to check. Jobs are created sequentially, checked
// in parallel (cel.Env is safe for concurrent use) and reported in creation
// order, so the result does not depend on scheduling.
type exprJob struct {
	ctx  exprCtx
	node *yaml.Node
	path string
	text string
	// check judges the output type; it returns "" when the type is fine.
	check func(t *types.Type) string

	done    bool     // already run (checked eagerly)
	leader  *exprJob // the job whose result this one shares
	checked *cel.Ast
	syntax  *cel.Issues
	typeErr *cel.Issues
	panic   any
}

// addExpr registers an expression. The first job of each distinct
// (environment, text) is queued at once for the checking workers, which run
// while the compiler goes on walking the document; identical expressions
// share that job's result (diagnostics are still reported at each one).
func (c *compiler) addExpr(ctx exprCtx, n *yaml.Node, path string, check func(*types.Type) string) *exprJob {
	j := &exprJob{ctx: ctx, node: n, path: path, text: exprText(n), check: check}
	c.jobs = append(c.jobs, j)
	k := jobKey{ctx.env, j.text}
	if l, ok := c.leaders[k]; ok {
		j.leader = l
		return j
	}
	c.leaders[k] = j
	c.startWorkers()
	c.queue <- j
	return j
}

// checkNow checks an expression synchronously (its type is needed before
// the walk can go on) and returns the job that holds the result.
func (c *compiler) checkNow(ctx exprCtx, n *yaml.Node, path string, check func(*types.Type) string) *exprJob {
	j := &exprJob{ctx: ctx, node: n, path: path, text: exprText(n), check: check}
	c.jobs = append(c.jobs, j)
	k := jobKey{ctx.env, j.text}
	if l, ok := c.leaders[k]; ok && l.done {
		j.leader = l
		return l
	}
	j.run()
	j.done = true
	if _, ok := c.leaders[k]; !ok {
		c.leaders[k] = j
	}
	return j
}

func (c *compiler) startWorkers() {
	if c.queue != nil {
		return
	}
	c.queue = make(chan *exprJob, 256)
	n := runtime.GOMAXPROCS(0)
	c.workers.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer c.workers.Done()
			for j := range c.queue {
				j.run()
			}
		}()
	}
}

// stopWorkers closes the queue and waits for the workers; it is safe to
// call more than once and runs even when the compilation panics.
func (c *compiler) stopWorkers() {
	if c.queue != nil && !c.queueClosed {
		close(c.queue)
		c.queueClosed = true
		c.workers.Wait()
	}
}

// wantType returns a check that the output is assignable to want.
func (c *compiler) wantType(want *types.Type, what string) func(*types.Type) string {
	if want == nil || want.Kind() == types.DynKind {
		return nil
	}
	return func(got *types.Type) string {
		if c.reg.assignable(got, want, 0) {
			return ""
		}
		msg := fmt.Sprintf("%s must be %s, but the expression is %s", what, typeString(want), typeString(got))
		if miss := c.reg.missingRequired(got, want); len(miss) > 0 {
			msg += fmt.Sprintf(" (missing required %s)", strings.Join(miss, ", "))
		}
		return msg
	}
}

// jobKey identifies expressions whose check results are interchangeable:
// the same text in the same environment.
type jobKey struct {
	env  *cel.Env
	text string
}

// runJobs waits for the checks and reports them in creation order, so the
// result does not depend on scheduling.
func (c *compiler) runJobs() {
	c.stopWorkers()
	for _, j := range c.jobs {
		if l := j.leader; l != nil {
			j.checked, j.syntax, j.typeErr, j.panic = l.checked, l.syntax, l.typeErr, l.panic
		}
		c.report(j)
	}
}

func (j *exprJob) run() {
	defer func() {
		if r := recover(); r != nil {
			j.panic = r
		}
	}()
	parsed, iss := j.ctx.env.Parse(j.text)
	if iss.Err() != nil {
		j.syntax = iss
		return
	}
	checked, iss := j.ctx.env.Check(parsed)
	if iss.Err() != nil {
		j.typeErr = iss
		return
	}
	j.checked = checked
}

func (c *compiler) report(j *exprJob) {
	switch {
	case j.panic != nil:
		c.diags.errorf(CodeInternal, c.src.rangeOf(j.node), j.path, "internal error while checking the expression: %v", j.panic)
	case j.syntax != nil:
		e := j.syntax.Errors()[0]
		c.diags.errorf(CodeExprSyntax, c.exprRange(j.node, e.Location.Line(), e.Location.Column()), j.path,
			"expression syntax error: %s", strings.TrimPrefix(firstLine(e.Message), "Syntax error: "))
	case j.typeErr != nil:
		for _, e := range j.typeErr.Errors() {
			c.diags.errorf(CodeExprType, c.exprRange(j.node, e.Location.Line(), e.Location.Column()), j.path,
				"%s", firstLine(e.Message))
		}
	default:
		if j.check != nil {
			if msg := j.check(j.checked.OutputType()); msg != "" {
				c.diags.errorf(CodeExprType, c.src.rangeOf(j.node), j.path, "%s", msg)
			}
		}
		if j.ctx.steps != nil {
			c.checkStepRefs(j)
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// checkStepRefs reports steps.<id> selections of steps that cannot have
// produced an output at the expression's location.
func (c *compiler) checkStepRefs(j *exprJob) {
	native := j.checked.NativeRep()
	info := native.SourceInfo()
	visit := func(e ast.Expr) {
		var id string
		switch e.Kind() {
		case ast.SelectKind:
			sel := e.AsSelect()
			if op := sel.Operand(); op.Kind() == ast.IdentKind && op.AsIdent() == "steps" {
				id = sel.FieldName()
			}
		case ast.CallKind:
			call := e.AsCall()
			args := call.Args()
			if call.FunctionName() == "_?._" && len(args) == 2 && args[0].Kind() == ast.IdentKind && args[0].AsIdent() == "steps" &&
				args[1].Kind() == ast.LiteralKind {
				if s, ok := args[1].AsLiteral().Value().(string); ok {
					id = s
				}
			}
		}
		if id == "" {
			return
		}
		idx, ok := j.ctx.steps.byID[id]
		if !ok || j.ctx.visible.has(idx) {
			return
		}
		loc := info.GetStartLocation(e.ID())
		c.diags.errorf(CodeExprStepRef, c.exprRange(j.node, loc.Line(), loc.Column()), j.path,
			"steps.%s is not available in %s: that step cannot have completed before this point (it is not on every path here, or is inside a loop or a later step)", id, j.ctx.what)
	}
	ast.PreOrderVisit(native.Expr(), ast.NewExprVisitor(visit))
}

// exprRange maps a CEL location (1-based line, 0-based column within the
// expression text) to the source. It is exact for plain and quoted
// single-line scalars and for literal blocks, approximate otherwise.
func (c *compiler) exprRange(n *yaml.Node, line, col int) Range {
	if line < 1 || col < 0 {
		return c.src.rangeOf(n)
	}
	var p Position
	switch {
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		l := n.Line + line
		indent := 0
		if l >= 1 && l <= len(c.src.lines) {
			text := c.src.lines[l-1]
			indent = len(text) - len(strings.TrimLeft(text, " "))
		}
		extra := 0
		if line == 1 {
			extra = 1 // the "="
		}
		p = Position{Line: l, Column: indent + 1 + extra + col}
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		if line == 1 {
			p = Position{Line: n.Line, Column: n.Column + 2 + col}
		} else {
			p = Position{Line: n.Line + line - 1, Column: col + 1}
		}
	default:
		if line == 1 {
			p = Position{Line: n.Line, Column: n.Column + 1 + col}
		} else {
			p = Position{Line: n.Line + line - 1, Column: col + 1}
		}
	}
	end := c.src.endOf(n, 0)
	if end.Line != p.Line || end.Column <= p.Column {
		end = Position{Line: p.Line, Column: p.Column + 1}
	}
	return Range{Start: p, End: end}
}
