package source

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/source/provider"
)

// Source kinds: what a dispatched receipt does.
const (
	KindRun    = "run"
	KindSignal = "signal"
)

// Source limits (docs/platform-api.md, "Provider sources").
const (
	MaxMappingLen    = 4096
	MaxSignalNameLen = 200
)

// SourceRequest is the body of POST E/provider-sources (docs/platform-api.md, "Provider
// source request").
type SourceRequest struct {
	Name                 string            `json:"name" api:"required" doc:"display name, 1 to 200 characters"`
	Provider             string            `json:"provider" api:"required" doc:"messaging provider id (slack, whatsapp, telegram, github)"`
	Package              string            `json:"package" api:"required" doc:"provider package name (GET P/provider-packages)"`
	PackageVersion       string            `json:"package_version" api:"required"`
	AdapterVersion       string            `json:"adapter_version,omitempty" doc:"may be omitted only when one declaration matches"`
	SchemaDigest         string            `json:"schema_digest" api:"required" doc:"the package's schema_digest: SHA-256 of the canonical JSON of the declared event schemas plus the sorted dispatchable kinds"`
	ConnectionRevisionID string            `json:"connection_revision_id" api:"required" format:"uuid" doc:"a revision of a connection of the environment for the same provider"`
	Policy               map[string]string `json:"policy" api:"required" doc:"exact copy of the connection revision's config; account_id pinned as a non-empty string when the connection defines it"`
	Kind                 string            `json:"kind" api:"required" enum:"run,signal"`
	ActivationID         string            `json:"activation_id,omitempty" format:"uuid" doc:"kind run: the activation a receipt starts"`
	RunID                string            `json:"run_id,omitempty" format:"uuid" doc:"kind signal: the run a receipt signals"`
	Signal               string            `json:"signal,omitempty" doc:"kind signal: the declared signal name, 1 to 200 characters"`
	Mapping              string            `json:"mapping,omitempty" doc:"workflow expression (CEL) over input.event (the normalized event), input.kind, input.event_id and input.account_id giving the run input or signal payload; default: the normalized event. At most 4096 characters"`
}

// Scope is the environment a source belongs to.
type Scope struct {
	TenantID      string `json:"tenant_id" format:"uuid"`
	ProjectID     string `json:"project_id" format:"uuid"`
	EnvironmentID string `json:"environment_id" format:"uuid"`
}

// Source is a provider source as the routes show it.
type Source struct {
	ID                   string            `json:"id" format:"uuid"`
	Name                 string            `json:"name"`
	Provider             string            `json:"provider"`
	Package              string            `json:"package"`
	PackageVersion       string            `json:"package_version"`
	AdapterVersion       string            `json:"adapter_version"`
	SchemaDigest         string            `json:"schema_digest"`
	ConnectionRevisionID string            `json:"connection_revision_id" format:"uuid"`
	Policy               map[string]string `json:"policy"`
	Kind                 string            `json:"kind"`
	ActivationID         *string           `json:"activation_id" format:"uuid"`
	RunID                *string           `json:"run_id" format:"uuid"`
	Signal               *string           `json:"signal"`
	Mapping              string            `json:"mapping" doc:"\"\": the normalized event is passed as is"`
	Scope                Scope             `json:"scope"`
	BindingID            string            `json:"binding_id" format:"uuid" doc:"the binding of the connection revision to this source (revoked when it is disabled)"`
	PrincipalID          string            `json:"principal_id" format:"uuid" doc:"the owner: runs start (or signals are sent) as this principal while it keeps its grants"`
	Disabled             bool              `json:"disabled"`
	IngressURL           string            `json:"ingress_url" doc:"the path providers deliver to: /provider-ingress/{id} on the services listener"`
	CreatedAt            time.Time         `json:"created_at"`
	DisabledAt           *time.Time        `json:"disabled_at"`
	DisabledBy           *string           `json:"disabled_by" format:"uuid"`
}

// capability is the target capability of a kind.
func capability(kind string) auth.Capability {
	if kind == KindSignal {
		return auth.CapRunSignal
	}
	return auth.CapRunStart
}

// ingressPath is the ingress path of a source.
func ingressPath(id string) string { return "/provider-ingress/" + id }

// checkSource applies the SourceRequest rules that need no stored state
// and answers the package declaration.
func checkSource(reg *provider.Registry, req *SourceRequest) (*provider.Package, error) {
	if n := utf8.RuneCountInString(req.Name); n == 0 || n > MaxNameLen {
		return nil, api.Invalid("/name", "name has 1 to %d characters", MaxNameLen)
	}
	if reg.ForProvider(req.Provider) == nil {
		return nil, api.Invalid("/provider", "provider is one of %v", reg.Providers())
	}
	found := reg.Find(req.Provider, req.Package, req.PackageVersion, "")
	if len(found) == 0 {
		return nil, api.Invalid("/package", "no package %s version %s of provider %s; see GET P/provider-packages", req.Package, req.PackageVersion, req.Provider)
	}
	var p *provider.Package
	if req.AdapterVersion == "" {
		if len(found) != 1 {
			return nil, api.Invalid("/adapter_version", "%d adapter versions of %s %s are declared; name one", len(found), req.Package, req.PackageVersion)
		}
		p = found[0]
		req.AdapterVersion = p.AdapterVersion
	} else if p = reg.Exact(req.Provider, req.Package, req.PackageVersion, req.AdapterVersion); p == nil {
		return nil, api.Invalid("/adapter_version", "%s %s declares no adapter version %s", req.Package, req.PackageVersion, req.AdapterVersion)
	}
	if req.SchemaDigest != p.SchemaDigest {
		return nil, api.Invalid("/schema_digest", "schema_digest does not match the declared event schemas and dispatchable kinds of %s %s (adapter %s)",
			p.Name, p.Version, p.AdapterVersion)
	}
	if !auth.IsCanonicalUUID(req.ConnectionRevisionID) {
		return nil, api.Invalid("/connection_revision_id", "connection_revision_id must be a canonical lowercase UUID")
	}
	if req.Policy == nil {
		return nil, api.Invalid("/policy", "policy is required: an exact copy of the connection revision's config")
	}
	switch req.Kind {
	case KindRun:
		if !auth.IsCanonicalUUID(req.ActivationID) {
			return nil, api.Invalid("/activation_id", "kind run needs activation_id, a canonical lowercase UUID")
		}
		if req.RunID != "" {
			return nil, api.Invalid("/run_id", "run_id belongs to kind signal")
		}
		if req.Signal != "" {
			return nil, api.Invalid("/signal", "signal belongs to kind signal")
		}
	case KindSignal:
		if !auth.IsCanonicalUUID(req.RunID) {
			return nil, api.Invalid("/run_id", "kind signal needs run_id, a canonical lowercase UUID")
		}
		if n := utf8.RuneCountInString(req.Signal); n == 0 || n > MaxSignalNameLen {
			return nil, api.Invalid("/signal", "kind signal needs signal, 1 to %d characters", MaxSignalNameLen)
		}
		if req.ActivationID != "" {
			return nil, api.Invalid("/activation_id", "activation_id belongs to kind run")
		}
	default:
		return nil, api.Invalid("/kind", "kind is run or signal")
	}
	if len(req.Mapping) > MaxMappingLen {
		return nil, api.Invalid("/mapping", "mapping has at most %d characters", MaxMappingLen)
	}
	req.Mapping = strings.TrimPrefix(strings.TrimSpace(req.Mapping), "=")
	return p, nil
}

// checkPolicy applies the policy rule against the connection revision:
// the same keys and values as its config, account_id non-empty when the
// connection defines one.
func checkPolicy(policy, config map[string]string) error {
	for k, v := range config {
		got, ok := policy[k]
		if !ok {
			return api.Invalid("/policy/"+k, "policy must copy the connection's config key %s", k)
		}
		if k == provider.AccountKey && got == "" {
			return api.Invalid("/policy/account_id", "the connection defines account_id: pin it as a non-empty string")
		}
		if got != v {
			return api.Invalid("/policy/"+k, "policy.%s differs from the connection revision's config", k)
		}
	}
	for k := range policy {
		if _, ok := config[k]; !ok {
			return api.Invalid("/policy/"+k, "the connection revision's config has no key %s", k)
		}
	}
	return nil
}
