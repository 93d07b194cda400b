package bridge_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestCreateJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	dir := t.TempDir()
	r := e.do("POST", "/v1/bridge/jobs", tok, map[string]any{"prompt": "hello", "workDir": dir, "metadata": map[string]string{"ticket": "42"}})
	is.Equal(r.Status, 202)
	job := r.json(t)
	is.Equal(r.Header.Get("Location"), "/v1/bridge/jobs/"+job["id"].(string))
	is.Equal(job["state"], "queued")
	is.Equal(job["client"], "ide")
	is.Equal(job["profile"], "default")
	is.Equal(job["provider"], "echo")
	is.Equal(job["attempt"], float64(1))
	is.Equal(job["workDir"], dir)
	is.Equal(job["metadata"].(map[string]any)["ticket"], "42")
	done := e.waitState(tok, job["id"].(string), "succeeded")
	is.True(done["finishedAt"] != nil)
	is.Equal(done["usage"].(map[string]any)["inputTokens"], float64(1)) // one word, counted once
}

func TestCreateJobBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := e.token("ide", "read,submit", "default")
	long := strings.Repeat("é", 100_000) // characters, not bytes
	meta := func(n int) map[string]string {
		m := map[string]string{}
		for i := 0; i < n; i++ {
			m[fmt.Sprint("k", i)] = "v"
		}
		return m
	}
	cases := []struct {
		name string
		body any
		want int
		code string
	}{
		{"prompt 1 char", map[string]any{"prompt": "x"}, 202, ""},
		{"prompt 100000 chars", map[string]any{"prompt": long}, 202, ""},
		{"prompt 100001 chars", map[string]any{"prompt": long + "x"}, 400, "invalid_request"},
		{"empty prompt", map[string]any{"prompt": ""}, 400, "invalid_request"},
		{"missing prompt", map[string]any{"profile": "default"}, 400, "invalid_request"},
		{"unknown field", map[string]any{"prompt": "x", "priority": 1}, 400, "invalid_request"},
		{"unknown profile", map[string]any{"prompt": "x", "profile": "nope"}, 400, "unknown_profile"},
		{"relative workDir", map[string]any{"prompt": "x", "workDir": "rel/dir"}, 400, "invalid_request"},
		{"missing workDir", map[string]any{"prompt": "x", "workDir": "/does/not/exist"}, 400, "invalid_request"},
		{"32 metadata", map[string]any{"prompt": "x", "metadata": meta(32)}, 202, ""},
		{"33 metadata", map[string]any{"prompt": "x", "metadata": meta(33)}, 400, "invalid_request"},
		{"metadata value 1024", map[string]any{"prompt": "x", "metadata": map[string]string{"k": strings.Repeat("v", 1024)}}, 202, ""},
		{"metadata value 1025", map[string]any{"prompt": "x", "metadata": map[string]string{"k": strings.Repeat("v", 1025)}}, 400, "invalid_request"},
		{"metadata key 65", map[string]any{"prompt": "x", "metadata": map[string]string{strings.Repeat("k", 65): "v"}}, 400, "invalid_request"},
		{"metadata number", map[string]any{"prompt": "x", "metadata": map[string]any{"k": 1}}, 400, "invalid_request"},
		{"array body", []string{"x"}, 400, "invalid_request"},
		{"trailing data", `{"prompt":"x"} {}`, 400, "invalid_request"},
		{"empty body", "", 400, "invalid_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("POST", "/v1/bridge/jobs", tok, c.body)
			if r.Status != c.want || (c.code != "" && r.code() != c.code) {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, c.want, c.code)
			}
		})
	}
	t.Run("not json content type", func(t *testing.T) {
		r := e.do("POST", "/v1/bridge/jobs", tok, `{"prompt":"x"}`, "Content-Type", "text/plain")
		if r.Status != 415 {
			t.Fatalf("got %d", r.Status)
		}
	})
	t.Run("body over 2 MiB", func(t *testing.T) {
		r := e.do("POST", "/v1/bridge/jobs", tok, `{"prompt":"`+strings.Repeat("x", 2<<20)+`"}`)
		if r.Status != 413 || r.code() != "body_too_large" {
			t.Fatalf("got %d %s", r.Status, r.Body)
		}
	})
	// Nothing rejected was stored.
	list := e.do("GET", "/v1/bridge/jobs?limit=200", tok, nil).json(t)
	if n := len(list["jobs"].([]any)); n != 4 {
		t.Fatalf("%d jobs stored, want the 4 accepted", n)
	}
}

func TestCreateJobIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	other := e.token("other", "read,submit")
	body := `{"prompt":"once"}`
	first := e.do("POST", "/v1/bridge/jobs", tok, body, "Idempotency-Key", "k1")
	is.Equal(first.Status, 202)
	again := e.do("POST", "/v1/bridge/jobs", tok, body, "Idempotency-Key", "k1")
	is.Equal(again.Status, 202)
	is.Equal(again.json(t)["id"], first.json(t)["id"])
	is.Equal(again.Header.Get("Idempotent-Replayed"), "true")

	conflict := e.do("POST", "/v1/bridge/jobs", tok, `{"prompt":"twice"}`, "Idempotency-Key", "k1")
	is.Equal(conflict.Status, 409)
	is.Equal(conflict.code(), "idempotency_conflict")

	// Keys are per principal.
	theirs := e.do("POST", "/v1/bridge/jobs", other, body, "Idempotency-Key", "k1")
	is.Equal(theirs.Status, 202)
	is.True(theirs.json(t)["id"] != first.json(t)["id"])

	is.Equal(e.do("POST", "/v1/bridge/jobs", tok, body, "Idempotency-Key", strings.Repeat("k", 128)).Status, 202)
	r := e.do("POST", "/v1/bridge/jobs", tok, body, "Idempotency-Key", strings.Repeat("k", 129))
	is.Equal(r.Status, 400)
	is.Equal(r.code(), "invalid_parameter")
	list := e.do("GET", "/v1/bridge/jobs", tok, nil).json(t)
	is.Equal(len(list["jobs"].([]any)), 2)
}

func TestListJobsPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, e.submit(tok, map[string]any{"prompt": fmt.Sprint("job ", i)}))
	}
	page := e.do("GET", "/v1/bridge/jobs?limit=2", tok, nil).json(t)
	is.Equal(len(page["jobs"].([]any)), 2)
	is.Equal(page["jobs"].([]any)[0].(map[string]any)["id"], ids[0])
	var seen []string
	next, _ := page["next"].(string)
	for _, j := range page["jobs"].([]any) {
		seen = append(seen, j.(map[string]any)["id"].(string))
	}
	for next != "" {
		p := e.do("GET", "/v1/bridge/jobs?limit=2&after="+url.QueryEscape(next), tok, nil).json(t)
		for _, j := range p["jobs"].([]any) {
			seen = append(seen, j.(map[string]any)["id"].(string))
		}
		next, _ = p["next"].(string)
	}
	is.Equal(seen, ids)

	desc := e.do("GET", "/v1/bridge/jobs?order=desc&limit=1", tok, nil).json(t)
	is.Equal(desc["jobs"].([]any)[0].(map[string]any)["id"], ids[4])
	cursor := desc["next"].(string)
	// A cursor is bound to its order and client.
	r := e.do("GET", "/v1/bridge/jobs?order=asc&after="+url.QueryEscape(cursor), tok, nil)
	is.Equal(r.Status, 400)
	other := e.token("other", "read")
	is.Equal(e.do("GET", "/v1/bridge/jobs?order=desc&after="+url.QueryEscape(cursor), other, nil).Status, 400)
	d2 := e.do("GET", "/v1/bridge/jobs?order=desc&limit=1&after="+url.QueryEscape(cursor), tok, nil).json(t)
	is.Equal(d2["jobs"].([]any)[0].(map[string]any)["id"], ids[3])

	for q, want := range map[string]int{
		"limit=1": 200, "limit=200": 200, "limit=0": 400, "limit=201": 400, "limit=-1": 400, "limit=abc": 400, "limit=%2B5": 400,
		"order=asc": 200, "order=desc": 200, "order=up": 400, "after=garbage": 400, "bogus=1": 400, "limit=1&limit=2": 400,
	} {
		if r := e.do("GET", "/v1/bridge/jobs?"+q, tok, nil); r.Status != want {
			t.Errorf("?%s: %d %s, want %d", q, r.Status, r.Body, want)
		}
	}
}

func TestPathValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := e.token("ide", "read,submit,control")
	id := e.submit(tok, map[string]any{"prompt": "x"})
	e.waitState(tok, id, "succeeded")
	for path, want := range map[string]int{
		"/v1/bridge/jobs/not-a-uuid":                           400,
		"/v1/bridge/jobs/" + strings.ToUpper(id):               200, // UUIDs are case-insensitive
		"/v1/bridge/jobs/00000000-0000-4000-8000-000000000000": 404,
		"/v1/bridge/jobs/" + id + "/tools/0":                   400,
		"/v1/bridge/jobs/" + id + "/tools/-1":                  400,
		"/v1/bridge/jobs/" + id + "/tools/x":                   400,
		"/v1/bridge/jobs/" + id + "/tools/1":                   404,
		"/v1/bridge/jobs/" + id + "?x=1":                       400,
		"/v1/bridge/nope":                                      404,
	} {
		if r := e.do("GET", path, tok, nil); r.Status != want {
			t.Errorf("GET %s: %d %s, want %d", path, r.Status, r.Body, want)
		}
	}
}

func TestToolsAndAudit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	id := e.submit(tok, map[string]any{"prompt": "#transcript:tools", "profile": "claude"})
	job := e.waitState(tok, id, "succeeded")
	is.True(strings.HasPrefix(job["sessionId"].(string), "8c1f6d2e"))
	is.True(job["usage"].(map[string]any)["costUsd"].(float64) > 0)

	tools := e.do("GET", "/v1/bridge/jobs/"+id+"/tools", tok, nil).json(t)
	list := tools["tools"].([]any)
	is.Equal(len(list), 4)
	first := list[0].(map[string]any)
	is.Equal(first["seq"], float64(1))
	is.Equal(first["name"], "Read")
	is.Equal(first["status"], "succeeded")
	is.Equal(first["files"], []any{"/home/dev/greet/greet.go"})
	is.True(first["durationMs"] != nil)
	is.Equal(list[3].(map[string]any)["status"], "failed")
	is.True(list[3].(map[string]any)["error"] != nil)

	files := e.do("GET", "/v1/bridge/jobs/"+id+"/tools?filesOnly=true", tok, nil).json(t)["tools"].([]any)
	is.Equal(len(files), 2)
	page := e.do("GET", "/v1/bridge/jobs/"+id+"/tools?limit=1&after=1", tok, nil).json(t)
	is.Equal(len(page["tools"].([]any)), 1)
	is.Equal(page["tools"].([]any)[0].(map[string]any)["seq"], float64(2))
	is.Equal(page["nextAfter"], float64(2))
	is.Equal(page["hasMore"], true)

	one := e.do("GET", "/v1/bridge/jobs/"+id+"/tools/3", tok, nil).json(t)
	is.Equal(one["name"], "Bash")
	is.Equal(one["input"].(map[string]any)["command"], "go test ./...")
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+id+"/tools/5", tok, nil).Status, 404)
	for q, want := range map[string]int{"filesOnly=yes": 400, "filesOnly=TRUE": 400, "filesOnly=false": 200, "after=-1": 400, "limit=0": 400, "limit=201": 400, "limit=200": 200} {
		if r := e.do("GET", "/v1/bridge/jobs/"+id+"/tools?"+q, tok, nil); r.Status != want {
			t.Errorf("tools?%s: %d, want %d", q, r.Status, want)
		}
	}

	// Audit: without payloads, summaries only; with payloads, whole tool I/O.
	audit := e.do("GET", "/v1/bridge/jobs/"+id+"/audit", tok, nil).json(t)
	entries := audit["entries"].([]any)
	through := audit["through"].(float64)
	is.Equal(float64(len(entries)), through)
	kinds := map[string]int{}
	for _, en := range entries {
		m := en.(map[string]any)
		kinds[m["kind"].(string)]++
		is.True(m["payload"] == nil)
	}
	is.Equal(kinds["tool.call"], 4)
	is.Equal(kinds["tool.result"], 4)
	is.Equal(kinds["job.created"], 1)
	full := e.do("GET", "/v1/bridge/jobs/"+id+"/audit?includePayloads=true", tok, nil).json(t)
	var sawInput bool
	for _, en := range full["entries"].([]any) {
		m := en.(map[string]any)
		if m["kind"] == "tool.call" {
			sawInput = m["payload"].(map[string]any)["input"] != nil
		}
	}
	is.True(sawInput)

	// Pages fixed to the first page's through do not change when the log grows.
	p1 := e.do("GET", fmt.Sprintf("/v1/bridge/jobs/%s/audit?limit=3&through=%d", id, int(through)), tok, nil)
	is.NoErr(nil)
	e.do("POST", "/v1/bridge/jobs/"+id+"/messages", tok, `{"text":"#echo more"}`)
	e.waitState(tok, id, "succeeded")
	p1again := e.do("GET", fmt.Sprintf("/v1/bridge/jobs/%s/audit?limit=3&through=%d", id, int(through)), tok, nil)
	is.Equal(string(p1.Body), string(p1again.Body))
	grown := e.do("GET", "/v1/bridge/jobs/"+id+"/audit?limit=200", tok, nil).json(t)
	is.True(grown["through"].(float64) > through)
	for q, want := range map[string]int{"includePayloads=1": 400, "through=-1": 400, "after=x": 400, "limit=201": 400, "through=0": 200} {
		if r := e.do("GET", "/v1/bridge/jobs/"+id+"/audit?"+q, tok, nil); r.Status != want {
			t.Errorf("audit?%s: %d, want %d", q, r.Status, want)
		}
	}
}

func TestAuditPayloadPagesStopNear4MB(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	// Each turn's prompt and answer (~1.5 MB each) land in the audit log.
	id := e.submit(tok, map[string]any{"prompt": "#big:1500000 #transcript:plain", "profile": "claude"})
	e.waitState(tok, id, "succeeded")
	for i := 0; i < 2; i++ {
		e.do("POST", "/v1/bridge/jobs/"+id+"/messages", tok, `{"text":"#big:1500000 #transcript:plain"}`)
		e.waitState(tok, id, "succeeded")
	}
	after, pages, total := 0, 0, 0
	for {
		r := e.do("GET", fmt.Sprintf("/v1/bridge/jobs/%s/audit?includePayloads=true&limit=200&after=%d", id, after), tok, nil)
		is.Equal(r.Status, 200)
		is.True(len(r.Body) < 5<<20) // about 4 MB at most (one entry may exceed it alone)
		page := r.json(t)
		n := len(page["entries"].([]any))
		is.True(n >= 1)
		total += n
		pages++
		if page["hasMore"] != true {
			break
		}
		after = int(page["nextAfter"].(float64))
	}
	is.True(pages >= 2)
	all := e.do("GET", "/v1/bridge/jobs/"+id+"/audit?limit=200", tok, nil).json(t)
	is.Equal(total, len(all["entries"].([]any)))
}
