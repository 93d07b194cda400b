package client

import "time"

// Scopes of a bridge client token (docs/bridge-api.md, "Tokens").
const (
	ScopeRead      = "read"
	ScopeSubmit    = "submit"
	ScopeControl   = "control"
	ScopeWorkflows = "workflows"
)

// AllScopes lists the scopes a client token may hold.
var AllScopes = []string{ScopeRead, ScopeSubmit, ScopeControl, ScopeWorkflows}

// TokenRequest is the body of POST /v1/bridge/admin/tokens.
type TokenRequest struct {
	ID       string   `json:"id"`
	Profiles []string `json:"profiles"`
	Scopes   []string `json:"scopes"`
}

// IssuedToken answers a token request; Token is shown only once.
type IssuedToken struct {
	Token     string    `json:"token"`
	Client    string    `json:"client"`
	Profiles  []string  `json:"profiles"`
	Scopes    []string  `json:"scopes"`
	TokenID   string    `json:"tokenId"`
	CreatedAt time.Time `json:"createdAt"`
}
