// Package docsui serves the daemon's API documentation with Swagger UI
// (swagger-ui-dist, vendored in assets/ and embedded in the binary), for the
// OpenAPI documents of the services listener: the callbacks service's
// (callbacks/README.md, at /v3/api-docs, UI at /swagger-ui.html), the platform's (docs/platform-api.md,
// at /docs/openapi.json, UI at /docs when PLATFORM_DOCS_ENABLED=true), a
// copy of the bridge's (docs/bridge-api.md: the bridge listener's own copy needs a
// token), the factory's and webhook ingestion's (ingest/README.md, at
// /v3/api-docs/ingest). See README: API documentation.
//
// It works offline: the page loads only its own assets, has no inline script
// or style, and every answer carries a Content-Security-Policy that allows
// nothing else (no CDN, no validator.swagger.io).
package docsui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/bridge/httpx"
)

//go:embed assets/swagger-ui-bundle.js assets/swagger-ui.css assets/app.js assets/app.css assets/LICENSE assets/NOTICE assets/swagger-ui-bundle.js.LICENSE.txt
var assetFS embed.FS

//go:embed page.html
var pageSource string

// Where the services listener serves each document (same origin as the UI).
const (
	CallbacksDocURL = "/v3/api-docs"
	PlatformDocURL  = "/docs/openapi.json"
	BridgeDocURL    = "/v3/api-docs/bridge"
	FactoryDocURL   = "/v3/api-docs/factory"
	IngestDocURL    = "/v3/api-docs/ingest"
)

// Doc is an OpenAPI document the UI offers.
type Doc struct {
	ID    string `json:"id"`    // ?doc=<id> selects it
	Title string `json:"title"` // shown in the selector
	URL   string `json:"url"`   // same-origin path of the document
}

// The daemon's documents, in the selector's order.
func documents() []Doc {
	return []Doc{
		{ID: "callbacks", Title: "Callbacks (spec 3)", URL: CallbacksDocURL},
		{ID: "platform", Title: "Workflow platform (spec 2)", URL: PlatformDocURL},
		{ID: "bridge", Title: "Agent bridge (spec 1)", URL: BridgeDocURL},
		{ID: "factory", Title: "Factory runs (spec 3)", URL: FactoryDocURL},
		{ID: "ingest", Title: "Webhook ingestion", URL: IngestDocURL},
	}
}

// Documents lists the daemon's documents with the one whose ID is primary
// first: the page shows it unless ?doc= names another. The page offers only
// those that answer (the platform's is served only when enabled).
func Documents(primary string) []Doc {
	docs := documents()
	for i, d := range docs {
		if d.ID == primary {
			return append([]Doc{d}, append(docs[:i:i], docs[i+1:]...)...)
		}
	}
	return docs
}

// CSP lets the UI load only its own files, call only its own origin (the
// documents and "Try it out") and show data: images (the stylesheet's icons).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// UI is Swagger UI mounted at a page path, its assets under a prefix.
type UI struct {
	page     string
	prefix   string
	pageHTML []byte
}

// New prepares the UI page at pagePath, whose assets live under
// assetsPrefix (which ends in "/"), offering docs (the first is shown).
func New(pagePath, assetsPrefix string, docs []Doc) (*UI, error) {
	if !strings.HasPrefix(pagePath, "/") || !strings.HasPrefix(assetsPrefix, "/") || !strings.HasSuffix(assetsPrefix, "/") {
		return nil, fmt.Errorf("docsui: page %q and assets %q must be absolute paths, the assets' ending in /", pagePath, assetsPrefix)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("docsui: no documents to offer")
	}
	list, err := json.Marshal(docs)
	if err != nil {
		return nil, fmt.Errorf("docsui: %w", err)
	}
	tmpl, err := template.New("page").Parse(pageSource)
	if err != nil {
		return nil, fmt.Errorf("docsui: page template: %w", err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, struct{ Assets, Docs string }{assetsPrefix, string(list)}); err != nil {
		return nil, fmt.Errorf("docsui: page: %w", err)
	}
	return &UI{page: pagePath, prefix: assetsPrefix, pageHTML: buf.Bytes()}, nil
}

// contentTypes are the types of the files the UI serves.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".txt":  "text/plain; charset=utf-8",
	"":      "text/plain; charset=utf-8", // LICENSE, NOTICE
}

// Handlers maps every path the UI serves, the page and each asset, to its
// handler (GET and HEAD; conditional requests by ETag).
func (u *UI) Handlers() map[string]http.Handler {
	out := map[string]http.Handler{u.page: serveBytes("page.html", u.pageHTML)}
	entries, _ := assetFS.ReadDir("assets")
	for _, e := range entries {
		data, err := assetFS.ReadFile("assets/" + e.Name())
		if err != nil {
			continue // embedded: cannot fail
		}
		out[u.prefix+e.Name()] = serveBytes(e.Name(), data)
	}
	return out
}

func serveBytes(name string, data []byte) http.Handler {
	sum := sha256.Sum256(data)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	ctype := contentTypes[path.Ext(name)]
	if strings.HasSuffix(name, ".LICENSE.txt") || ctype == "" {
		ctype = contentTypes[""]
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		SecurityHeaders(h)
		h.Set("Content-Type", ctype)
		h.Set("ETag", etag)
		h.Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	})
}

// SecurityHeaders sets the UI's Content-Security-Policy and its companions.
func SecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

// JSON serves the OpenAPI document doc builds (once, on first request), for
// the bridge's copy on the services listener.
func JSON(doc func() ([]byte, error)) http.Handler {
	once := sync.OnceValues(doc)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := once()
		if err != nil {
			httpx.WriteProblem(w, r, &httpx.Problem{Status: http.StatusInternalServerError, Code: "INTERNAL", Message: "the API document could not be built"})
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodHead {
			_, _ = w.Write(data)
		}
	})
}
