// Command wiregen writes the client's wire types from the server's view
// types: each listed type and the module types it refers to, with their
// doc comments, exported fields and json tags (a doc tag becomes a
// comment). Run it through `go generate ./client` when the client's
// TestWireTypesFollowTheServers says a view changed; hand-written code of
// the client lives in other files.
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

const module = "github.com/agentbridge/bridge/"

// group is one client package: the roots to copy (server dir.Type, renamed
// with =Name) and the file each server package's types go to.
type group struct {
	dir, pkg, doc string
	files         map[string]string
	roots         []string
}

var groups = []group{
	{dir: ".", pkg: "client", files: map[string]string{
		"platform/engine": "runs.go", "platform/kernel": "runs.go", "platform/identity": "identity.go",
		"platform/catalog": "catalog.go", "platform/activation": "catalog.go", "platform/trigger": "triggers.go",
		"platform/source": "sources.go", "platform/source/provider": "sources.go", "platform/file": "files.go",
		"platform/steptest": "steptests.go",
	}, roots: []string{
		"platform/engine.Run", "platform/engine.RunSummary", "platform/engine.Step", "platform/engine.LogEntry",
		"platform/engine.HumanTask", "platform/engine.Incident", "platform/engine.StartRequest", "platform/engine.CancelRequest",
		"platform/engine.PauseRequest", "platform/engine.SignalRequest", "platform/engine.SignalAccepted",
		"platform/engine.ResolveRequest", "platform/engine.Resolved", "platform/engine.HumanReassignRequest",
		"platform/engine.HumanCompleteRequest", "platform/engine.ArchiveRequest", "platform/engine.RunArchive",
		"platform/engine.RunPurged",
		"platform/identity.Identity", "platform/identity.Grant", "platform/identity.Scope", "platform/identity.Tenant",
		"platform/identity.Project", "platform/identity.Environment", "platform/identity.Principal",
		"platform/identity.CreateTenantRequest", "platform/identity.CreateProjectRequest",
		"platform/identity.CreateEnvironmentRequest", "platform/identity.GrantRequest", "platform/identity.CreatePrincipalRequest",
		"platform/identity.Workspace", "platform/identity.WorkspaceProject", "platform/identity.WorkspaceEnvironment",
		"platform/identity.ClientConfiguration", "platform/identity.SignInEntry",
		"platform/catalog.Version", "platform/catalog.VersionSummary", "platform/catalog.Draft", "platform/catalog.PublishRequest",
		"platform/activation.Activation", "platform/activation.Request=ActivationRequest",
		"platform/trigger.Schedule", "platform/trigger.ScheduleRequest", "platform/trigger.Upcoming", "platform/trigger.Occurrence",
		"platform/trigger.Trigger", "platform/trigger.TriggerRequest", "platform/trigger.CreatedTrigger",
		"platform/trigger.Delivery=TriggerDelivery",
		"platform/source.Connection", "platform/source.ConnectionRequest", "platform/source.Source", "platform/source.SourceRequest",
		"platform/source.Receipt", "platform/source.Scope=SourceScope", "platform/source/provider.Package",
		"platform/file.File", "platform/file.CreateRequest=FileCreateRequest", "platform/file.Deletion=FileDeletion",
		"platform/file.Origin=FileOrigin",
		"platform/steptest.Policy=TestPolicy", "platform/steptest.PolicyRequest=TestPolicyRequest", "platform/steptest.StepTest",
		"platform/steptest.StepTestRequest", "platform/steptest.StepTestCreated", "platform/steptest.StepTestAnswer",
		"platform/steptest.TestActivation", "platform/steptest.TestActivationRequest", "platform/steptest.TestRunRequest",
		"platform/steptest.ListenRequest", "platform/steptest.Listen", "platform/steptest.TestDelivery",
	}},
	{dir: "factory", pkg: "factory", doc: "Package factory holds the wire types of the factory API (docs/factory-api.md).",
		files: map[string]string{"factory": "types.go"}, roots: []string{
			"factory.Run", "factory.CreateRequest", "factory.Project", "factory.RunPage", "factory.Plan", "factory.JournalView",
			"factory.HandoffRequest", "factory.AnswerRequest", "factory.ReconcileRequest",
		}},
	{dir: "callbacks", pkg: "callbacks", doc: "Package callbacks holds the wire types of the callbacks API (GET /api/openapi.json of the services listener).",
		files: map[string]string{"callbacks": "types.go"}, roots: []string{
			"callbacks.Execution", "callbacks.FieldFilter", "callbacks.FilterRequest", "callbacks.SortOrder",
			"callbacks.PaginationResponse", "callbacks.ReplayRequest", "callbacks.ReplayResult", "callbacks.RetryRequest",
		}},
	{dir: "ingest", pkg: "ingest", doc: "Package ingest holds the wire types of the webhook ingestion API.",
		files: map[string]string{"ingest": "types.go"}, roots: []string{"ingest.Activity", "ingest.DLQEntry"}},
}

func main() {
	log.SetFlags(0)
	// go generate runs in client/; the module root is its parent.
	root, err := filepath.Abs("..")
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range groups {
		if err := g.write(root); err != nil {
			log.Fatalf("wiregen %s: %v", g.pkg, err)
		}
	}
}

// write copies g's types into their files.
func (g group) write(root string) error {
	c := &copier{root: root, fset: token.NewFileSet(), pkgs: map[string]*pkgTypes{}, names: map[key]string{}, used: map[string]key{}}
	for _, r := range g.roots {
		l, rename, _ := strings.Cut(r, "=")
		i := strings.LastIndex(l, ".")
		k := key{l[:i], l[i+1:]}
		c.name(k, rename)
	}
	bodies := map[string]*bytes.Buffer{}
	var order []string
	for done := map[key]bool{}; len(c.queue) > 0; {
		k := c.queue[0]
		c.queue = c.queue[1:]
		if done[k] {
			continue
		}
		done[k] = true
		src, err := c.emit(k)
		if err != nil {
			return err
		}
		file, ok := g.files[k.dir]
		if !ok {
			return fmt.Errorf("%s.%s: no file for %s", k.dir, k.name, k.dir)
		}
		if bodies[file] == nil {
			bodies[file] = &bytes.Buffer{}
			order = append(order, file)
		}
		bodies[file].Write(src)
	}
	for _, file := range order {
		body := bodies[file].String()
		var b bytes.Buffer
		fmt.Fprintf(&b, "// Code generated by wiregen from the server's view types; DO NOT EDIT.\n\n")
		if g.doc != "" {
			fmt.Fprintf(&b, "// %s\n", g.doc)
		}
		fmt.Fprintf(&b, "package %s\n\n", g.pkg)
		var imports []string
		if strings.Contains(body, "json.") {
			imports = append(imports, `"encoding/json"`)
		}
		if strings.Contains(body, "time.") {
			imports = append(imports, `"time"`)
		}
		if len(imports) > 0 {
			fmt.Fprintf(&b, "import (\n\t%s\n)\n\n", strings.Join(imports, "\n\t"))
		}
		b.WriteString(body)
		out, err := format.Source(b.Bytes())
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if err := os.WriteFile(filepath.Join(g.dir, file), out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

type key struct{ dir, name string }

// pkgTypes are the type declarations of one server package.
type pkgTypes struct {
	dir     string
	specs   map[string]*ast.TypeSpec
	decls   map[string]*ast.GenDecl
	files   map[string]*ast.File
	imports map[*ast.File]map[string]string // local name -> import path
}

type copier struct {
	root  string
	fset  *token.FileSet
	pkgs  map[string]*pkgTypes
	names map[key]string
	used  map[string]key
	queue []key
}

// name answers the client name of k, queueing k the first time.
func (c *copier) name(k key, rename string) string {
	if n, ok := c.names[k]; ok {
		return n
	}
	n := k.name
	if rename != "" {
		n = rename
	}
	if o, ok := c.used[n]; ok && o != k {
		base := filepath.Base(k.dir)
		n = strings.ToUpper(base[:1]) + base[1:] + n
	}
	c.names[k], c.used[n] = n, k
	c.queue = append(c.queue, k)
	return n
}

func (c *copier) load(dir string) (*pkgTypes, error) {
	if p, ok := c.pkgs[dir]; ok {
		return p, nil
	}
	p := &pkgTypes{dir: dir, specs: map[string]*ast.TypeSpec{}, decls: map[string]*ast.GenDecl{}, files: map[string]*ast.File{},
		imports: map[*ast.File]map[string]string{}}
	parsed, err := parser.ParseDir(c.fset, filepath.Join(c.root, dir), func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	for _, pk := range parsed {
		for _, f := range pk.Files {
			imps := map[string]string{}
			for _, is := range f.Imports {
				path := strings.Trim(is.Path.Value, `"`)
				name := filepath.Base(path)
				if is.Name != nil {
					name = is.Name.Name
				}
				imps[name] = path
			}
			p.imports[f] = imps
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, s := range gd.Specs {
					ts := s.(*ast.TypeSpec)
					p.specs[ts.Name.Name], p.decls[ts.Name.Name], p.files[ts.Name.Name] = ts, gd, f
				}
			}
		}
	}
	c.pkgs[dir] = p
	return p, nil
}

// emit answers the declaration of k in the client.
func (c *copier) emit(k key) ([]byte, error) {
	p, err := c.load(k.dir)
	if err != nil {
		return nil, err
	}
	ts, ok := p.specs[k.name]
	if !ok {
		return nil, fmt.Errorf("no type %s.%s", k.dir, k.name)
	}
	var b bytes.Buffer
	doc := ""
	if ts.Doc != nil {
		doc = ts.Doc.Text()
	} else if gd := p.decls[k.name]; gd.Doc != nil && len(gd.Specs) == 1 {
		doc = gd.Doc.Text()
	}
	doc = strings.Replace(doc, k.name, c.names[k], 1)
	for _, l := range strings.Split(strings.TrimRight(doc, "\n"), "\n") {
		if l != "" {
			fmt.Fprintf(&b, "// %s\n", l)
		}
	}
	params := ""
	if ts.TypeParams != nil {
		var tp []string
		for _, f := range ts.TypeParams.List {
			var t bytes.Buffer
			_ = printer.Fprint(&t, c.fset, f.Type)
			tp = append(tp, c.idents(f.Names)+" "+t.String())
		}
		params = "[" + strings.Join(tp, ", ") + "]"
	}
	fmt.Fprintf(&b, "type %s%s ", c.names[k], params)
	if err := c.writeType(&b, ts.Type, p, p.files[k.name]); err != nil {
		return nil, fmt.Errorf("%s.%s: %w", k.dir, k.name, err)
	}
	b.WriteString("\n\n")
	return b.Bytes(), nil
}

func (c *copier) idents(ids []*ast.Ident) string {
	var s []string
	for _, id := range ids {
		s = append(s, id.Name)
	}
	return strings.Join(s, ", ")
}

// writeType writes e with the module's types renamed to the client's.
func (c *copier) writeType(b *bytes.Buffer, e ast.Expr, p *pkgTypes, f *ast.File) error {
	switch x := e.(type) {
	case *ast.Ident:
		if _, ok := p.specs[x.Name]; ok {
			b.WriteString(c.name(key{p.dir, x.Name}, ""))
		} else {
			b.WriteString(x.Name)
		}
	case *ast.SelectorExpr:
		pk := x.X.(*ast.Ident).Name
		if path := p.imports[f][pk]; strings.HasPrefix(path, module) {
			b.WriteString(c.name(key{strings.TrimPrefix(path, module), x.Sel.Name}, ""))
		} else {
			b.WriteString(pk + "." + x.Sel.Name)
		}
	case *ast.StarExpr:
		b.WriteString("*")
		return c.writeType(b, x.X, p, f)
	case *ast.ArrayType:
		b.WriteString("[]")
		if x.Len != nil {
			return fmt.Errorf("arrays are not copied")
		}
		return c.writeType(b, x.Elt, p, f)
	case *ast.MapType:
		b.WriteString("map[")
		if err := c.writeType(b, x.Key, p, f); err != nil {
			return err
		}
		b.WriteString("]")
		return c.writeType(b, x.Value, p, f)
	case *ast.IndexExpr:
		if err := c.writeType(b, x.X, p, f); err != nil {
			return err
		}
		b.WriteString("[")
		if err := c.writeType(b, x.Index, p, f); err != nil {
			return err
		}
		b.WriteString("]")
	case *ast.StructType:
		b.WriteString("struct {\n")
		for _, fl := range x.Fields.List {
			if len(fl.Names) > 0 && !fl.Names[0].IsExported() {
				continue
			}
			var tag reflect.StructTag
			if fl.Tag != nil {
				tag = reflect.StructTag(strings.Trim(fl.Tag.Value, "`"))
			}
			if fl.Doc != nil {
				for _, cm := range fl.Doc.List {
					b.WriteString(cm.Text + "\n")
				}
			} else if d := tag.Get("doc"); d != "" {
				b.WriteString("// " + d + "\n")
			}
			if len(fl.Names) > 0 {
				b.WriteString(c.idents(fl.Names) + " ")
			}
			if err := c.writeType(b, fl.Type, p, f); err != nil {
				return err
			}
			if j, ok := tag.Lookup("json"); ok {
				fmt.Fprintf(b, " `json:%q`", j)
			}
			b.WriteString("\n")
		}
		b.WriteString("}")
	default:
		return fmt.Errorf("a %T is not copied", e)
	}
	return nil
}
