package console

import (
	"encoding/json"
	"net/http"

	"github.com/agentbridge/bridge/bridge"
)

// Error codes of the console's own routes. The console answers on the
// bridge listener, so its errors are the bridge's: the same shape
// ({"error": {"code", "message"}}, docs/bridge-api.md "Errors"), codes and
// status table (bridge.WriteError).
const (
	codeUnauthorized        = bridge.CodeUnauthorized // no session, or the code or token does not sign in
	codeOwnerOnly           = bridge.CodeOwnerOnly    // needs the owner token
	codeCSRF                = bridge.CodeCSRFFailed   // a change without the session's X-Bridge-CSRF header
	codeInvalidRequest      = bridge.CodeInvalidRequest
	codeNotFound            = bridge.CodeNotFound
	codeMethodNotAllowed    = bridge.CodeMethodNotAllowed
	codeUnavailable         = bridge.CodeServiceUnavailable  // the services listener did not answer
	codePlatformUnavailable = bridge.CodePlatformUnavailable // platform sign-in failed
)

func errf(code, format string, args ...any) *bridge.Error {
	return bridge.Errorf(code, format, args...)
}

// writeError answers err in the bridge listener's error shape; console
// answers are never cached.
func writeError(w http.ResponseWriter, err error) {
	w.Header().Set("Cache-Control", "no-store")
	bridge.WriteError(w, err, "bridge console")
}

func respond(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
