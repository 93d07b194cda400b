package factory

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// gitTool runs the user's git (found on PATH like the agent CLIs). It never
// writes to the user's repository: only clones in the data directory.
type gitTool struct{ bin string }

// run executes git in dir and returns its stdout; the error carries the end
// of stderr.
func (g gitTool) run(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, g.bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		return out.String(), fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return out.String(), nil
}

// source is the repository a run works on, resolved from a path inside it.
type source struct {
	Root     string // absolute path of the work tree root
	Subdir   string // the project directory relative to Root ("" for the root)
	Revision string // HEAD commit
	Tree     string // HEAD's tree: the recorded source_tree
}

// resolveSource finds the repository containing path and its HEAD.
func (g gitTool) resolveSource(ctx context.Context, path string) (source, error) {
	var s source
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return s, fieldErr("repo", "%q is not a directory", path)
	}
	root, err := g.run(ctx, path, "rev-parse", "--show-toplevel")
	if err != nil {
		return s, fieldErr("repo", "%q is not inside a git repository", path)
	}
	prefix, err := g.run(ctx, path, "rev-parse", "--show-prefix")
	if err != nil {
		return s, fieldErr("repo", "%q: %v", path, err)
	}
	s.Root = filepath.Clean(strings.TrimSpace(root))
	s.Subdir = strings.TrimSuffix(strings.TrimSpace(prefix), "/")
	rev, err := g.run(ctx, s.Root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return s, fieldErr("repo", "the repository at %s has no commit yet: the factory works on committed source", s.Root)
	}
	tree, err := g.run(ctx, s.Root, "rev-parse", "--verify", "HEAD^{tree}")
	if err != nil {
		return s, fmt.Errorf("factory: tree of HEAD in %s: %w", s.Root, err)
	}
	s.Revision, s.Tree = strings.TrimSpace(rev), strings.TrimSpace(tree)
	return s, nil
}

// clone makes a fresh clone of root at revision in ws and checks that its
// tree is the recorded one. The clone has no remote: nothing the agent does
// in it can reach the user's repository.
func (g gitTool) clone(ctx context.Context, root, revision, tree, ws string) error {
	if err := os.MkdirAll(filepath.Dir(ws), 0o700); err != nil {
		return err
	}
	if _, err := os.Stat(ws); err == nil {
		return fmt.Errorf("workspace %s already exists", ws)
	}
	// --no-hardlinks: the clone's objects are copies, so nothing done in
	// the workspace can reach a file of the user's repository.
	if _, err := g.run(ctx, filepath.Dir(ws), "clone", "--quiet", "--no-checkout", "--no-hardlinks", "--", root, ws); err != nil {
		return err
	}
	steps := [][]string{
		{"checkout", "--quiet", "--detach", revision},
		{"remote", "remove", "origin"},
	}
	for _, args := range steps {
		if _, err := g.run(ctx, ws, args...); err != nil {
			return err
		}
	}
	got, err := g.run(ctx, ws, "rev-parse", "HEAD^{tree}")
	if err != nil {
		return err
	}
	if strings.TrimSpace(got) != tree {
		return fmt.Errorf("the clone's tree %s is not the recorded source tree %s", strings.TrimSpace(got), tree)
	}
	return nil
}

// commit records every change of the work tree as a commit and returns its
// revision, or "" when there was nothing to commit.
func (g gitTool) commit(ctx context.Context, ws, message string) (string, error) {
	if _, err := g.run(ctx, ws, "add", "--all"); err != nil {
		return "", err
	}
	status, err := g.run(ctx, ws, "status", "--porcelain")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(status) == "" {
		return "", nil
	}
	if _, err := g.run(ctx, ws, "-c", "user.name=Agent Bridge factory", "-c", "user.email=factory@localhost",
		"-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify", "-m", message); err != nil {
		return "", err
	}
	return g.head(ctx, ws)
}

func (g gitTool) head(ctx context.Context, ws string) (string, error) {
	rev, err := g.run(ctx, ws, "rev-parse", "HEAD")
	return strings.TrimSpace(rev), err
}

// restore puts the work tree back to HEAD: what verification commands wrote
// (build outputs, formatters) is removed so the checkpoint is what was
// verified. Ignored files stay.
func (g gitTool) restore(ctx context.Context, ws string) ([]string, error) {
	status, err := g.run(ctx, ws, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var dirty []string
	for _, line := range strings.Split(strings.TrimRight(status, "\n"), "\n") {
		if len(line) > 3 {
			dirty = append(dirty, line[3:])
		}
	}
	if len(dirty) == 0 {
		return nil, nil
	}
	if _, err := g.run(ctx, ws, "reset", "--hard", "--quiet"); err != nil {
		return dirty, err
	}
	_, err = g.run(ctx, ws, "clean", "-fd", "--quiet")
	return dirty, err
}

// changedFiles lists the paths that differ between two revisions.
func (g gitTool) changedFiles(ctx context.Context, ws, from, to string) (changed, deleted []string, err error) {
	out, err := g.run(ctx, ws, "diff", "--no-renames", "--name-status", "-z", from, to)
	if err != nil {
		return nil, nil, err
	}
	fields := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	changed = []string{}
	for i := 0; i+1 < len(fields); i += 2 {
		status, path := fields[i], fields[i+1]
		changed = append(changed, path)
		if status == "D" {
			deleted = append(deleted, path)
		}
	}
	return changed, deleted, nil
}

// errDiffTooLarge reports a diff over the limit; size is a lower bound.
type errDiffTooLarge struct{ size, limit int64 }

func (e *errDiffTooLarge) Error() string {
	return fmt.Sprintf("the run diff exceeds %d bytes (the 1 MB limit of a run diff); inspect the checkpoint commit or changes.zip instead", e.limit)
}

// diff writes the patch between two revisions to path, refusing one larger
// than limit (the partial file is removed). It returns the patch's size.
func (g gitTool) diff(ctx context.Context, ws, from, to, path string, limit int64) (int64, error) {
	cmd := exec.CommandContext(ctx, g.bin, "diff", "--binary", "--no-renames", "--no-color", from, to)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return 0, err
	}
	n, copyErr := io.Copy(f, io.LimitReader(stdout, limit+1))
	if n > limit {
		_ = cmd.Process.Kill()
	}
	_, _ = io.Copy(io.Discard, stdout)
	waitErr := cmd.Wait()
	closeErr := f.Close()
	if n > limit {
		_ = os.Remove(path)
		return n, &errDiffTooLarge{size: n, limit: limit}
	}
	if err := errors.Join(copyErr, waitErr, closeErr); err != nil {
		return n, fmt.Errorf("git diff: %w", err)
	}
	return n, nil
}

// manifest is manifest.json of changes.zip.
type manifest struct {
	Run                string   `json:"run"`
	SourceRevision     string   `json:"source_revision"`
	CheckpointRevision string   `json:"checkpoint_revision"`
	Changed            []string `json:"changed_files"`
	Deleted            []string `json:"deleted_files"`
}

// exportZip writes changes.zip: manifest.json, and under files/ every
// changed path as it is in the checkpoint (deleted ones are only listed).
func exportZip(ws, path string, m manifest, deleted map[string]bool) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	if m.Deleted == nil {
		m.Deleted = []string{}
	}
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "manifest.json", Method: zip.Deflate, Modified: time.Now()})
	if err == nil {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(m)
	}
	for _, p := range m.Changed {
		if err != nil {
			break
		}
		if deleted[p] {
			continue
		}
		err = addZipFile(zw, filepath.Join(ws, filepath.FromSlash(p)), "files/"+p)
	}
	return errors.Join(err, zw.Close(), f.Close())
}

func addZipFile(zw *zip.Writer, src, name string) error {
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	hdr, err := zip.FileInfoHeader(st)
	if err != nil {
		return err
	}
	hdr.Name, hdr.Method = name, zip.Deflate
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, target)
		return err
	}
	if !st.Mode().IsRegular() {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	_, err = io.Copy(w, in)
	return err
}

// checkWorkspace reports why a retained workspace no longer holds the
// checkpoint: missing, another HEAD, or local changes. "" means intact.
func (g gitTool) checkWorkspace(ctx context.Context, ws, checkpoint string) string {
	if _, err := os.Stat(filepath.Join(ws, ".git")); err != nil {
		return "the retained workspace " + ws + " is missing"
	}
	head, err := g.head(ctx, ws)
	if err != nil {
		return "the retained workspace " + ws + " is not a readable git clone: " + err.Error()
	}
	if head != checkpoint {
		return fmt.Sprintf("the retained workspace is at %s, not at the checkpoint %s", head, checkpoint)
	}
	status, err := g.run(ctx, ws, "status", "--porcelain")
	if err != nil {
		return "the retained workspace cannot be inspected: " + err.Error()
	}
	if strings.TrimSpace(status) != "" {
		return "the retained workspace has changes after the checkpoint"
	}
	return ""
}
