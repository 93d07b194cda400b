package callbacks

import (
	"embed"
	"net/http"
	"path"

	"github.com/julienschmidt/httprouter"
)

// The API UI is a small self-contained viewer (HTML, JS and CSS embedded in
// the binary): it works offline and loads nothing from a CDN.
//
//go:embed ui/index.html ui/app.js ui/app.css
var uiFS embed.FS

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// uiCSP lets the UI load only its own files and call only this origin.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func serveAsset(name string) handler {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		data, err := uiFS.ReadFile("ui/" + name)
		if err != nil {
			return err
		}
		h := w.Header()
		h.Set("Content-Type", contentTypes[path.Ext(name)])
		h.Set("Content-Security-Policy", uiCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		_, _ = w.Write(data)
		return nil
	}
}
