package catalog

import (
	"testing"

	"github.com/agentbridge/bridge/platform/lang"
)

func TestEntryOfAction(t *testing.T) {
	src := "kind: action\nid: acme/get\nversion: 2\nsideEffect: idempotent\ntimeout: 10s\ndeadline: 1m\n" +
		"retry: {maxAttempts: 4, nonRetryable: [NOT_FOUND]}\n" +
		"input: {type: object, properties: {id: {type: string}}}\nworker: fetchers\n"
	res := lang.Compile([]byte(src), lang.Options{Catalog: baseLock()})
	if !res.OK {
		t.Fatalf("does not compile: %v", res.Diagnostics)
	}
	e, queue, err := entryOf(Version{ID: "0190a0b0-0000-7000-8000-000000000001", Kind: lang.KindAction,
		DefinitionID: "acme/get", Version: 2, Digest: res.Digest, Artifact: res.Artifact})
	if err != nil {
		t.Fatal(err)
	}
	if queue != "fetchers" || e.SideEffect != "idempotent" || e.TimeoutMs != 10000 || e.DeadlineMs != 60000 {
		t.Fatalf("entry %+v queue %q", e, queue)
	}
	if e.Retry == nil || e.Retry.MaxAttempts != 4 || len(e.Retry.NonRetryable) != 1 || e.OutputSchema != nil {
		t.Fatalf("entry %+v", e)
	}
	lock := baseLock()
	lock.Definitions = append(lock.Definitions, e)
	lock.Tasks = append(lock.Tasks, lang.CatalogTask{Queue: queue})
	if err := lock.Validate(); err != nil {
		t.Fatal(err)
	}
	wf := "kind: workflow\nid: acme/w\nsteps:\n  - id: get\n    action: acme/get@2\n    with: {id: x}\n"
	if r := lang.Compile([]byte(wf), lang.Options{Catalog: lock}); !r.OK {
		t.Fatalf("workflow against the derived lock: %v", r.Diagnostics)
	}
	if _, _, err := entryOf(Version{Artifact: []byte("{")}); err == nil {
		t.Fatal("a broken artifact must be an error")
	}
}

func TestDescriptorsCompile(t *testing.T) {
	ds, err := loadDescriptors()
	if err != nil {
		t.Fatal(err)
	}
	if got := adapterNames(ds); len(got) != 3 || got[0] != "echo" || got[1] != "http" || got[2] != "noop" {
		t.Fatalf("adapters %v", got)
	}
	for _, d := range ds {
		if len(d.Actions) == 0 || d.Digest == "" || d.Source == "" {
			t.Fatalf("descriptor %+v", d)
		}
	}
	// A publication of the exact manifest is recognised; another is only listed.
	http := ds[1]
	pub := []Version{
		{ID: "a", Kind: lang.KindConnector, DefinitionID: http.DefinitionID, Version: http.Version, Digest: http.Digest,
			Artifact: []byte(`{"adapter":"http","actions":[{"name":"request"}]}`)},
		{ID: "b", Kind: lang.KindConnector, DefinitionID: "acme/other", Version: 1, Digest: "sha256:x",
			Artifact: []byte(`{"adapter":"http","actions":[]}`)},
		{ID: "c", Kind: lang.KindConnector, DefinitionID: "acme/echo", Version: 1, Digest: "sha256:y",
			Artifact: []byte(`{"adapter":"echo","actions":[]}`)},
	}
	v, err := http.withPublications(pub)
	if err != nil {
		t.Fatal(err)
	}
	if v.PublishedVersionID == nil || *v.PublishedVersionID != "a" || len(v.Published) != 2 {
		t.Fatalf("descriptor %+v", v)
	}
}

func TestMigrations(t *testing.T) {
	m := Migrations()
	if len(m) != 1 || m[0].Version != 4 || m[0].Name != "0004_definitions" {
		t.Fatalf("migrations %+v", m)
	}
}
