package client_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentbridge/bridge/callbacks"
	"github.com/agentbridge/bridge/client"
	cbclient "github.com/agentbridge/bridge/client/callbacks"
	facclient "github.com/agentbridge/bridge/client/factory"
	ingclient "github.com/agentbridge/bridge/client/ingest"
	"github.com/agentbridge/bridge/factory"
	"github.com/agentbridge/bridge/ingest"
	"github.com/agentbridge/bridge/platform/activation"
	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/file"
	"github.com/agentbridge/bridge/platform/identity"
	"github.com/agentbridge/bridge/platform/source"
	"github.com/agentbridge/bridge/platform/source/provider"
	"github.com/agentbridge/bridge/platform/steptest"
	"github.com/agentbridge/bridge/platform/trigger"
)

// TestWireTypesFollowTheServers: every wire type of the client has the
// JSON shape (names, omitempty, nesting, kinds) of the server's view it
// copies, so a change on either side fails here rather than in a user's
// terminal.
func TestWireTypesFollowTheServers(t *testing.T) {
	t.Parallel()
	pairs := []struct{ c, s any }{
		{client.Run{}, engine.Run{}}, {client.RunSummary{}, engine.RunSummary{}}, {client.Step{}, engine.Step{}},
		{client.LogEntry{}, engine.LogEntry{}}, {client.HumanTask{}, engine.HumanTask{}}, {client.Incident{}, engine.Incident{}},
		{client.StartRequest{}, engine.StartRequest{}}, {client.CancelRequest{}, engine.CancelRequest{}},
		{client.PauseRequest{}, engine.PauseRequest{}}, {client.SignalRequest{}, engine.SignalRequest{}},
		{client.SignalAccepted{}, engine.SignalAccepted{}}, {client.ResolveRequest{}, engine.ResolveRequest{}},
		{client.Resolved{}, engine.Resolved{}}, {client.HumanReassignRequest{}, engine.HumanReassignRequest{}},
		{client.HumanCompleteRequest{}, engine.HumanCompleteRequest{}},
		{client.Identity{}, identity.Identity{}}, {client.Grant{}, identity.Grant{}}, {client.Tenant{}, identity.Tenant{}},
		{client.Project{}, identity.Project{}}, {client.Environment{}, identity.Environment{}}, {client.Principal{}, identity.Principal{}},
		{client.CreateTenantRequest{}, identity.CreateTenantRequest{}}, {client.CreateProjectRequest{}, identity.CreateProjectRequest{}},
		{client.CreateEnvironmentRequest{}, identity.CreateEnvironmentRequest{}}, {client.GrantRequest{}, identity.GrantRequest{}},
		{client.CreatePrincipalRequest{}, identity.CreatePrincipalRequest{}}, {client.ClientConfiguration{}, identity.ClientConfiguration{}},
		{client.Version{}, catalog.Version{}}, {client.VersionSummary{}, catalog.VersionSummary{}}, {client.Draft{}, catalog.Draft{}},
		{client.PublishRequest{}, catalog.PublishRequest{}},
		{client.Activation{}, activation.Activation{}}, {client.ActivationRequest{}, activation.Request{}},
		{client.Schedule{}, trigger.Schedule{}}, {client.ScheduleRequest{}, trigger.ScheduleRequest{}}, {client.Upcoming{}, trigger.Upcoming{}},
		{client.Occurrence{}, trigger.Occurrence{}}, {client.Trigger{}, trigger.Trigger{}}, {client.TriggerRequest{}, trigger.TriggerRequest{}},
		{client.CreatedTrigger{}, trigger.CreatedTrigger{}}, {client.TriggerDelivery{}, trigger.Delivery{}},
		{client.Connection{}, source.Connection{}}, {client.ConnectionRequest{}, source.ConnectionRequest{}}, {client.Source{}, source.Source{}},
		{client.SourceRequest{}, source.SourceRequest{}}, {client.Receipt{}, source.Receipt{}}, {client.Package{}, provider.Package{}},
		{client.File{}, file.File{}}, {client.FileCreateRequest{}, file.CreateRequest{}}, {client.FileDeletion{}, file.Deletion{}},
		{client.TestPolicy{}, steptest.Policy{}}, {client.TestPolicyRequest{}, steptest.PolicyRequest{}}, {client.StepTest{}, steptest.StepTest{}},
		{client.StepTestRequest{}, steptest.StepTestRequest{}}, {client.StepTestCreated{}, steptest.StepTestCreated{}},
		{client.StepTestAnswer{}, steptest.StepTestAnswer{}}, {client.TestActivation{}, steptest.TestActivation{}},
		{client.TestActivationRequest{}, steptest.TestActivationRequest{}}, {client.TestRunRequest{}, steptest.TestRunRequest{}},
		{client.ListenRequest{}, steptest.ListenRequest{}}, {client.Listen{}, steptest.Listen{}}, {client.TestDelivery{}, steptest.TestDelivery{}},
		{facclient.Run{}, factory.Run{}}, {facclient.CreateRequest{}, factory.CreateRequest{}}, {facclient.RunPage{}, factory.RunPage{}},
		{facclient.Plan{}, factory.Plan{}}, {facclient.JournalView{}, factory.JournalView{}}, {facclient.HandoffRequest{}, factory.HandoffRequest{}},
		{facclient.AnswerRequest{}, factory.AnswerRequest{}}, {facclient.ReconcileRequest{}, factory.ReconcileRequest{}},
		{cbclient.Execution{}, callbacks.Execution{}}, {cbclient.FilterRequest{}, callbacks.FilterRequest{}},
		{cbclient.PaginationResponse[cbclient.Execution]{}, callbacks.PaginationResponse[callbacks.Execution]{}},
		{cbclient.ReplayRequest{}, callbacks.ReplayRequest{}}, {cbclient.ReplayResult{}, callbacks.ReplayResult{}},
		{cbclient.RetryRequest{}, callbacks.RetryRequest{}},
		{ingclient.Activity{}, ingest.Activity{}}, {ingclient.DLQEntry{}, ingest.DLQEntry{}},
		{ingclient.Page[ingclient.DLQEntry]{}, ingest.Page[ingest.DLQEntry]{}},
	}
	for _, p := range pairs {
		c, s := reflect.TypeOf(p.c), reflect.TypeOf(p.s)
		if diff := shapeDiff(c, s, c.Name(), 0); diff != "" {
			t.Errorf("%s does not follow %s: %s (run: go generate ./client)", c, s, diff)
		}
	}
}

// shapeDiff compares the JSON shapes of two types ("" when alike).
func shapeDiff(c, s reflect.Type, at string, depth int) string {
	if depth > 8 || c == s {
		return ""
	}
	if c.Kind() != s.Kind() {
		return at + ": " + c.Kind().String() + " vs " + s.Kind().String()
	}
	switch c.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return shapeDiff(c.Elem(), s.Elem(), at+"[]", depth+1)
	case reflect.Map:
		return shapeDiff(c.Elem(), s.Elem(), at+"{}", depth+1)
	case reflect.Struct:
		cf, sf := jsonFields(c), jsonFields(s)
		if len(cf) != len(sf) {
			return at + ": fields " + strings.Join(keys(cf), ",") + " vs " + strings.Join(keys(sf), ",")
		}
		for i := range cf {
			if cf[i].tag != sf[i].tag {
				return at + ": " + cf[i].tag + " vs " + sf[i].tag
			}
			if d := shapeDiff(cf[i].typ, sf[i].typ, at+"."+cf[i].tag, depth+1); d != "" {
				return d
			}
		}
	}
	return ""
}

type field struct {
	tag string
	typ reflect.Type
}

func jsonFields(t reflect.Type) []field {
	var fs []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		if !ok {
			tag = f.Name
		}
		fs = append(fs, field{tag, f.Type})
	}
	return fs
}

func keys(fs []field) []string {
	var s []string
	for _, f := range fs {
		s = append(s, f.tag)
	}
	return s
}
