package identity

// ClientConfiguration is the public body of GET /api/v1/client-configuration:
// the server's display name and its sign-in entries, without secrets.
type ClientConfiguration struct {
	DisplayName string        `json:"display_name"`
	SignIn      []SignInEntry `json:"sign_in"`
}

// SignInEntry tells a client how people sign in with one provider: a
// public client with device authorization, or the authorization-code flow
// with PKCE (S256).
type SignInEntry struct {
	ProviderID  string   `json:"provider_id"`
	DisplayName string   `json:"display_name"`
	ClientID    string   `json:"client_id"`
	Scopes      []string `json:"scopes"`
	// Issuer is the provider's issuer; clients read its OIDC discovery
	// document for endpoints not listed here.
	Issuer                      string `json:"issuer"`
	Flow                        string `json:"flow" enum:"device,authorization_code"`
	DeviceAuthorizationEndpoint string `json:"device_authorization_endpoint,omitempty"`
	AuthorizationEndpoint       string `json:"authorization_endpoint,omitempty"`
	TokenEndpoint               string `json:"token_endpoint,omitempty"`
}

// Sign-in flows.
const (
	FlowDevice            = "device"
	FlowAuthorizationCode = "authorization_code"
)
