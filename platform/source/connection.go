package source

import (
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/source/provider"
)

// Connection limits (docs/platform-api.md, "Connections").
const (
	MaxNameLen        = 200
	MaxConfigValueLen = 500
	MaxSecretLen      = 1024
)

// ConnectionRequest is the body of POST E/connections and of POST
// E/connections/{connection}/revisions.
type ConnectionRequest struct {
	Name     string            `json:"name" api:"required" doc:"display name, 1 to 200 characters"`
	Provider string            `json:"provider" api:"required" doc:"provider id: slack, whatsapp, telegram or github (a new revision keeps its connection's provider)"`
	Config   map[string]string `json:"config,omitempty" doc:"settings of the provider account, keys from the provider package's config_keys (account_id pins the account); values 1 to 500 characters"`
	Secrets  map[string]string `json:"secrets" api:"required" writeOnly:"true" doc:"exactly the provider package's secret_keys, each 1 to 1024 characters; sealed at rest and never shown"`
}

// Connection is one immutable connection revision as the routes show it:
// never its secrets, only their names.
type Connection struct {
	ID           string            `json:"id" format:"uuid" doc:"the revision id (connection_revision_id of a provider source)"`
	ConnectionID string            `json:"connection_id" format:"uuid" doc:"the connection every revision belongs to"`
	Revision     int64             `json:"revision" doc:"1 for the first revision, +1 for each later one"`
	Name         string            `json:"name"`
	Provider     string            `json:"provider"`
	Config       map[string]string `json:"config"`
	SecretKeys   []string          `json:"secret_keys" doc:"names of the sealed secrets"`
	PrincipalID  string            `json:"principal_id" format:"uuid" doc:"who created the revision"`
	CreatedAt    time.Time         `json:"created_at"`
}

// connectionRow is a stored revision with its scope and sealed secrets.
type connectionRow struct {
	Connection
	Tenant, Project, Environment string
	sealed                       string
}

// checkConnection applies the rules of a ConnectionRequest that need no
// stored state and answers the provider's package.
func checkConnection(reg *provider.Registry, req *ConnectionRequest) (*provider.Package, error) {
	if n := utf8.RuneCountInString(req.Name); n == 0 || n > MaxNameLen {
		return nil, api.Invalid("/name", "name has 1 to %d characters", MaxNameLen)
	}
	p := reg.ForProvider(req.Provider)
	if p == nil {
		return nil, api.Invalid("/provider", "provider is one of %v", reg.Providers())
	}
	if req.Config == nil {
		req.Config = map[string]string{}
	}
	for k, v := range req.Config {
		if !slices.Contains(p.ConfigKeys, k) {
			return nil, api.Invalid("/config/"+k, "%s connections accept the config keys %v", p.Provider, p.ConfigKeys)
		}
		if n := utf8.RuneCountInString(v); n == 0 || n > MaxConfigValueLen {
			return nil, api.Invalid("/config/"+k, "a config value has 1 to %d characters", MaxConfigValueLen)
		}
	}
	for _, k := range p.SecretKeys {
		if _, ok := req.Secrets[k]; !ok {
			return nil, api.Invalid("/secrets/"+k, "%s connections need the secret %s", p.Provider, k)
		}
	}
	for k, v := range req.Secrets {
		if !slices.Contains(p.SecretKeys, k) {
			return nil, api.Invalid("/secrets/"+k, "%s connections hold exactly the secrets %v", p.Provider, p.SecretKeys)
		}
		if len(v) == 0 || len(v) > MaxSecretLen {
			return nil, api.Invalid("/secrets/"+k, "a secret has 1 to %d bytes", MaxSecretLen)
		}
	}
	return p, nil
}

// secretNames lists the keys of secrets, sorted.
func secretNames(secrets map[string]string) []string {
	out := make([]string, 0, len(secrets))
	for k := range secrets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
