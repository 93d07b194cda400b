package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbridge/bridge/client"

	"github.com/spf13/cobra"
)

func (a *app) fileCmd() *cobra.Command {
	var t envTarget
	cmd := &cobra.Command{
		Use:     "file",
		Aliases: []string{"files"},
		Short:   "Upload, list, download and delete the files of an environment",
		Long: `Files belong to one environment: operators upload them (file.manage) and
read them (file.read); runs carry references to them (x-file in a schema,
see docs/workflow-language.md), human tasks attach them ('bridge human
complete --attach') and workers produce them.

An upload is sent in chunks and becomes visible only after the daemon has
checked its size and SHA-256. An interrupted upload (a lost connection, a
daemon restart) resumes with --resume <file-id>: only the missing chunks are
sent. A download resumes from its .part file with a range request.

The tenant, project and environment default as for 'bridge run'.

Exit codes: 0 ok, 1 failure (the API's problem code is shown), 2 usage,
3 daemon not running.`,
		Example: `  bridge file upload ./scan.pdf
  bridge file upload ./big.iso --resume <file-id>
  bridge file list
  bridge file download <file-id> -o scan.pdf
  bridge file delete <file-id>`,
	}
	t.add(cmd, true)
	cmd.AddCommand(a.fileUploadCmd(&t), a.fileListCmd(&t), a.fileGetCmd(&t), a.fileDownloadCmd(&t), a.fileDeleteCmd(&t))
	return cmd
}

// uploadTarget is where an upload's routes are: E/files or a human task's.
type uploadTarget struct {
	create, finish string
	chunk          func(id string, index int64) string
	finishBody     func(id string) any
}

func envUploads(tg *target) uploadTarget {
	return uploadTarget{create: tg.env("/files"),
		chunk:      func(id string, i int64) string { return tg.env(fmt.Sprintf("/files/%s/chunks?index=%d", id, i)) },
		finish:     "",
		finishBody: func(string) any { return nil }}
}

func humanUploads(tg *target, task string) uploadTarget {
	base := tg.env("/human-tasks/" + url.PathEscape(task) + "/files")
	return uploadTarget{create: base + "/create", finish: base + "/finish",
		chunk: func(id string, i int64) string {
			return fmt.Sprintf("%s/chunk?file_id=%s&index=%d", base, url.QueryEscape(id), i)
		},
		finishBody: func(id string) any { return map[string]string{"file_id": id} }}
}

// uploadOptions are the flags of an upload.
type uploadOptions struct {
	name, mediaType, resume string
	chunkSize               int64
	quiet                   bool
}

// uploadFile sends path through ut and answers the ready file.
func (a *app) uploadFile(ctx context.Context, tg *target, ut uploadTarget, path string, o uploadOptions) (client.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return client.File{}, withCode(ExitUsage, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return client.File{}, withCode(ExitUsage, fmt.Errorf("%s is not a regular file", path))
	}
	size := st.Size()
	h := sha256.New()
	if err := copyProgress(h, fh, a.progress("hashing", size, o.quiet)); err != nil {
		return client.File{}, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	var f client.File
	if o.resume != "" {
		if f, err = tg.api().File(ctx, tg.e(), o.resume); err != nil {
			return f, err
		}
		if f.Size != size || f.SHA256 != sum {
			return f, fmt.Errorf("file %s was declared with %d bytes and SHA-256 %s; %s has %d bytes and %s", f.ID, f.Size, f.SHA256, path, size, sum)
		}
	} else {
		name := o.name
		if name == "" {
			name = filepath.Base(path)
		}
		req := client.FileCreateRequest{Name: name, Size: size, SHA256: sum, MediaType: o.mediaType, ChunkSize: o.chunkSize}
		if err := tg.call(ctx, http.MethodPost, ut.create, nil, req, &f); err != nil {
			return f, err
		}
	}
	if f.Status == client.FileReady {
		return f, nil
	}
	bar := a.progress("uploading "+f.ID, size, o.quiet)
	bar.add(f.ReceivedBytes)
	buf := make([]byte, f.ChunkSize)
	for i := f.ReceivedChunks; i < f.Chunks; i++ {
		n := min(f.ChunkSize, f.Size-i*f.ChunkSize)
		if _, err := fh.ReadAt(buf[:n], i*f.ChunkSize); err != nil {
			return f, err
		}
		if err := tg.s.sendChunk(ctx, ut.chunk(f.ID, i), buf[:n]); err != nil {
			bar.done()
			return f, fmt.Errorf("%w\nthe upload is kept; resume it with: bridge file upload %s --resume %s", err, path, f.ID)
		}
		bar.add(n)
	}
	bar.done()
	finish := ut.finish
	if finish == "" {
		finish = tg.env("/files/" + f.ID + "/finish")
	}
	err = tg.call(ctx, http.MethodPost, finish, nil, ut.finishBody(f.ID), &f)
	return f, err
}

// chunkAttempts bounds the sends of one chunk: a lost connection or a
// 5xx is retried (a chunk is idempotent by its index).
const chunkAttempts = 4

// sendChunk posts data as a chunk, retrying transient failures.
func (s *platformSession) sendChunk(ctx context.Context, path string, data []byte) error {
	var err error
	for attempt := 0; attempt < chunkAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
		var resp *http.Response
		resp, err = s.send(ctx, path, map[string]string{"Content-Type": "application/octet-stream"}, bytes.NewReader(data), false)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			return resp.Body.Close()
		}
		var ae *apiError
		if errors.As(err, &ae) && ae.Status < 500 {
			return err
		}
	}
	return err
}

// send posts body (nil: none) with hdr and the session's token and answers
// the response to read (a problem is returned as an error); a 401 signs in
// again once. A streaming answer has no overall timeout: a download is as
// long as it takes.
func (s *platformSession) send(ctx context.Context, path string, hdr map[string]string, body io.ReadSeeker, streaming bool) (*http.Response, error) {
	for retry := 0; ; retry++ {
		tok, err := s.ensureToken(ctx)
		if err != nil {
			return nil, err
		}
		c := s.services(tok)
		if streaming {
			c = c.Streaming()
		}
		var rd io.Reader
		if body != nil {
			if _, err := body.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
			rd = body
		}
		resp, err := c.Send(ctx, http.MethodPost, path, hdr, rd)
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && retry == 0 {
			s.token = ""
			continue
		}
		return resp, err
	}
}

func (a *app) fileUploadCmd(t *envTarget) *cobra.Command {
	var o uploadOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "upload <path>",
		Short: "Upload a file in chunks, with a progress bar; --resume continues an interrupted upload",
		Long: `Uploads a file to the environment (POST E/files, then its chunks, then finish):
the file is hashed first (SHA-256), sent in chunks of --chunk-size bytes
(default: the daemon's, 8 MiB) and becomes visible once the daemon has
checked its size and digest. A chunk whose answer is lost is sent again.
If the upload stops (the connection, the daemon), the command prints how to
resume it: --resume <file-id> sends only the missing chunks.`,
		Example: `  bridge file upload ./scan.pdf
  bridge file upload ./scan.pdf --name invoice-1001.pdf --media-type application/pdf --json
  bridge file upload ./disk.img --resume 0193c2a4-5f0e-7cc1-9d1e-2b7a0c1d3e4f`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.chunkSize < 0 {
				return withCode(ExitUsage, errors.New("--chunk-size must be positive"))
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			o.quiet = o.quiet || asJSON
			f, err := a.uploadFile(ctx, tg, envUploads(tg), args[0], o)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(f)
			}
			_, err = fmt.Fprintf(a.out, "Uploaded %s as file %s (%s, sha256 %s)\n", args[0], f.ID, byteSize(f.Size), f.SHA256)
			return err
		},
	}
	cmd.Flags().StringVar(&o.name, "name", "", "the file's name (default: the path's base name)")
	cmd.Flags().StringVar(&o.mediaType, "media-type", "", "its media type (default application/octet-stream)")
	cmd.Flags().Int64Var(&o.chunkSize, "chunk-size", 0, "bytes per chunk (default: the daemon's)")
	cmd.Flags().StringVar(&o.resume, "resume", "", "continue the upload of this file id (same content)")
	cmd.Flags().BoolVar(&o.quiet, "quiet", false, "no progress bar")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the file as JSON (no progress bar)")
	return cmd
}

func (a *app) fileListCmd(t *envTarget) *cobra.Command {
	var status string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the environment's files",
		Long:  `Lists the uploading and ready files of the environment (GET E/files), oldest first.`,
		Example: `  bridge file list
  bridge file list --status uploading --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "" && status != client.FileUploading && status != client.FileReady {
				return withCode(ExitUsage, errors.New("--status must be uploading or ready"))
			}
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			q := url.Values{"limit": {"100"}}
			if status != "" {
				q.Set("status", status)
			}
			files, err := collectPages[client.File](ctx, tg.s, tg.env("/files?"+q.Encode()), false)
			if err != nil {
				return err
			}
			return printTable(a, files, asJSON, "no files", "ID\tNAME\tSIZE\tSTATUS\tORIGIN\tCREATED", func(f client.File) []string {
				status := f.Status
				if f.Status == client.FileUploading {
					status += fmt.Sprintf(" (%d/%d chunks)", f.ReceivedChunks, f.Chunks)
				}
				return []string{f.ID, f.Name, byteSize(f.Size), status, f.Origin.Kind, f.CreatedAt.Local().Format(timeLayout)}
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only uploading or ready files")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the files as a JSON array")
	return cmd
}

func (a *app) fileGetCmd(t *envTarget) *cobra.Command {
	return envOneCmd(a, t, &cobra.Command{
		Use:     "get <file-id>",
		Aliases: []string{"show"},
		Short:   "Show a file: name, size, digest, status, where an upload resumes",
		Example: `  bridge file get <file-id>
  bridge file get <file-id> --json | jq .sha256`,
		Args: cobra.ExactArgs(1),
	}, "file", func(ctx context.Context, tg *target, args []string) (client.File, error) {
		return tg.api().File(ctx, tg.e(), args[0])
	}, func(_ *target, f client.File) error {
		tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "File %s %s\n", f.ID, f.Status)
		fmt.Fprintf(tw, "  name\t%s\n  media type\t%s\n  size\t%s (%d bytes)\n  sha256\t%s\n", f.Name, f.MediaType, byteSize(f.Size), f.Size, f.SHA256)
		fmt.Fprintf(tw, "  chunks\t%d of %d received (%s each)\n", f.ReceivedChunks, f.Chunks, byteSize(f.ChunkSize))
		origin := f.Origin.Kind
		if f.Origin.ID != "" {
			origin += " " + f.Origin.ID + " (run " + f.Origin.RunID + ")"
		}
		fmt.Fprintf(tw, "  origin\t%s\n  created\t%s by %s\n", origin, f.CreatedAt.Local().Format(timeLayout), f.CreatedBy)
		if f.ExpiresAt != nil {
			fmt.Fprintf(tw, "  expires\t%s (unless finished)\n", f.ExpiresAt.Local().Format(timeLayout))
		}
		return tw.Flush()
	})
}

func (a *app) fileDownloadCmd(t *envTarget) *cobra.Command {
	var out string
	var quiet, asJSON bool
	cmd := &cobra.Command{
		Use:   "download <file-id> [-o path]",
		Short: "Download a file's content, with a progress bar; resumes from <path>.part",
		Long: `Downloads a ready file (POST E/files/{id}/download) into -o (default: the
file's name in the current directory; - writes to stdout). The content goes
to <path>.part first and is renamed once its SHA-256 matches; an
interrupted download resumes from the .part file with a range request
bound to the file's digest (If-Range).`,
		Example: `  bridge file download <file-id>
  bridge file download <file-id> -o scan.pdf
  bridge file download <file-id> -o - | sha256sum`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, tg, err := t.openEnv(cmd, a)
			if err != nil {
				return err
			}
			var f client.File
			if err := tg.call(ctx, http.MethodGet, tg.env("/files/"+url.PathEscape(args[0])), nil, nil, &f); err != nil {
				return err
			}
			if out == "" {
				out = f.Name
			}
			if err := a.download(ctx, tg, f, out, quiet || asJSON || out == "-"); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(f)
			}
			if out != "-" {
				_, err = fmt.Fprintf(a.out, "Downloaded file %s to %s (%s, sha256 verified)\n", f.ID, out, byteSize(f.Size))
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "where to write the content (- for stdout)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the file as JSON after the download")
	return cmd
}

// download writes f's content to out, resuming from out.part.
func (a *app) download(ctx context.Context, tg *target, f client.File, out string, quiet bool) error {
	var w io.Writer = a.out
	var part *os.File
	var have int64
	if out != "-" {
		var err error
		if part, err = os.OpenFile(out+".part", os.O_RDWR|os.O_CREATE, 0o600); err != nil {
			return err
		}
		defer part.Close()
		if have, err = part.Seek(0, io.SeekEnd); err != nil {
			return err
		}
		if have > f.Size {
			if err := part.Truncate(0); err != nil {
				return err
			}
			have, _ = part.Seek(0, io.SeekStart)
		}
		w = part
	}
	hdr := map[string]string{}
	if have > 0 {
		hdr["Range"] = "bytes=" + strconv.FormatInt(have, 10) + "-"
		hdr["If-Range"] = `"` + f.SHA256 + `"`
	}
	resp, err := tg.s.send(ctx, tg.env("/files/"+f.ID+"/download"), hdr, nil, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && have > 0 {
		// the server sent everything (If-Range did not match)
		if err := part.Truncate(0); err != nil {
			return err
		}
		if _, err := part.Seek(0, io.SeekStart); err != nil {
			return err
		}
		have = 0
	}
	bar := a.progress("downloading "+f.ID, f.Size, quiet)
	bar.add(have)
	if err := copyProgress(w, resp.Body, bar); err != nil {
		return fmt.Errorf("download interrupted (%w); run the command again to resume", err)
	}
	if part == nil {
		return nil
	}
	if err := part.Sync(); err != nil {
		return err
	}
	if _, err := part.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, part, make([]byte, 1<<20)); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		_ = os.Remove(out + ".part")
		return fmt.Errorf("the downloaded content has SHA-256 %s, not %s; removed, run the command again", got, f.SHA256)
	}
	return os.Rename(out+".part", out)
}

func (a *app) fileDeleteCmd(t *envTarget) *cobra.Command {
	return envOneCmd(a, t, &cobra.Command{
		Use:   "delete <file-id>",
		Short: "Delete a file (kept for the runs that still need it)",
		Long: `Deletes a file (DELETE E/files/{id}), or abandons an upload. The file
disappears at once; its content is removed when no running run refers to it.`,
		Example: `  bridge file delete <file-id>`,
		Args:    cobra.ExactArgs(1),
	}, "answer", func(ctx context.Context, tg *target, args []string) (client.FileDeletion, error) {
		return tg.api().DeleteFile(ctx, tg.e(), args[0])
	}, func(_ *target, d client.FileDeletion) error {
		msg := "Deleted file " + d.ID
		if d.RetainedForRuns > 0 {
			msg += fmt.Sprintf(" (its content is kept until the %d running runs that refer to it end)", d.RetainedForRuns)
		}
		_, err := fmt.Fprintln(a.out, msg)
		return err
	})
}

// byteSize formats n bytes for people.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// progressBar draws "label [=====>    ] 45% 460.0 MiB / 1.0 GiB 120.3 MB/s"
// on stderr, at most every 200 ms.
type progressBar struct {
	w            io.Writer
	label        string
	total, n     int64
	start, drawn time.Time
	quiet        bool
}

func (a *app) progress(label string, total int64, quiet bool) *progressBar {
	return &progressBar{w: a.errw, label: label, total: total, start: time.Now(), quiet: quiet}
}

func (p *progressBar) Write(b []byte) (int, error) {
	p.add(int64(len(b)))
	return len(b), nil
}

func (p *progressBar) add(n int64) {
	p.n += n
	if now := time.Now(); now.Sub(p.drawn) >= 200*time.Millisecond {
		p.drawn = now
		p.draw()
	}
}

func (p *progressBar) draw() {
	if p.quiet {
		return
	}
	const width = 30
	frac := 1.0
	if p.total > 0 {
		frac = float64(p.n) / float64(p.total)
	}
	fill := int(frac * width)
	bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
	if fill < width {
		bar = bar[:fill] + ">" + bar[fill+1:]
	}
	rate := float64(p.n) / max(time.Since(p.start).Seconds(), 0.001) / 1e6
	fmt.Fprintf(p.w, "\r%s [%s] %3.0f%% %s / %s %.1f MB/s ", p.label, bar, frac*100, byteSize(p.n), byteSize(p.total), rate)
}

// copyProgress copies r to w in 1 MiB pieces, counting them on bar, and
// ends the bar.
func copyProgress(w io.Writer, r io.Reader, bar *progressBar) error {
	_, err := io.CopyBuffer(w, io.TeeReader(r, bar), make([]byte, 1<<20))
	bar.done()
	return err
}

func (p *progressBar) done() {
	if p.quiet {
		return
	}
	p.draw()
	fmt.Fprintln(p.w)
}

// attachFiles uploads each field=path of attach through human task id's
// file routes and answers data (a JSON object, or absent) with each field
// set to the file reference {file_id}.
func (a *app) attachFiles(ctx context.Context, tg *target, id string, data json.RawMessage, attach []string, quiet bool) (json.RawMessage, error) {
	obj := map[string]any{}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
			return nil, withCode(ExitUsage, errors.New("--attach needs --data to be a JSON object (or absent)"))
		}
	}
	for _, at := range attach {
		field, path, ok := strings.Cut(at, "=")
		if !ok || field == "" || path == "" {
			return nil, withCode(ExitUsage, fmt.Errorf("--attach %q: use field=path (e.g. scan=./scan.pdf)", at))
		}
		f, err := a.uploadFile(ctx, tg, humanUploads(tg, id), path, uploadOptions{quiet: quiet})
		if err != nil {
			return nil, err
		}
		obj[field] = map[string]string{"file_id": f.ID}
	}
	return json.Marshal(obj)
}
