package sim

import (
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/platform/api"
)

// Problem codes of the simulator (docs/platform-api.md, "Debug sessions").
const (
	CodeRequest      = "PF-DEBUG-REQUEST"
	CodeCommand      = "PF-DEBUG-COMMAND"
	CodeMissingMock  = "PF-DEBUG-MISSING_MOCK"
	CodeMockKey      = "PF-DEBUG-MOCK-KEY"
	CodeMockOutput   = "PF-DEBUG-MOCK-OUTPUT"
	CodeSignal       = "PF-DEBUG-SIGNAL"
	CodeHumanTask    = "PF-DEBUG-HUMAN-TASK"
	CodeState        = "PF-DEBUG-STATE"
	CodeBreakpoint   = "PF-DEBUG-BREAKPOINT"
	CodeTime         = "PF-DEBUG-TIME"
	CodeLimit        = "PF-DEBUG-LIMIT"
	CodeRevision     = "PF-DEBUG-REVISION"
	CodeExpired      = "PF-DEBUG-EXPIRED"
	CodeCapacity     = "PF-OPERATION-CAPACITY"
	CodeSecretValue  = "PF-SCHEMA-SECRET_VALUE"
	CodeNotFound     = "PF-NOT-FOUND"
	CodeStudioFull   = "PF-STUDIO-SESSIONS-FULL"
	CodeStudioBusy   = "PF-STUDIO-BUSY"
	CodeStudioReq    = "PF-STUDIO-REQUEST"
	CodeStudioCat    = "PF-STUDIO-CATALOG"
	CodeStudioCatCfl = "PF-STUDIO-CATALOG-CONFLICT"
	CodeDocSize      = "PF-STUDIO-DOCUMENT-SIZE"
	CodeDocTestData  = "PF-STUDIO-TESTDATA-INVALID"
	CodeETag         = "PF-ETAG"
)

// Error is a coded refusal of the simulator; the platform's error table
// (platform/api) gives Code its status. Path is a JSON Pointer into the
// request body when one field is at fault.
type Error struct {
	Code    string
	Message string
	Path    string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func refuse(code, path, format string, args ...any) *Error {
	return &Error{Code: code, Path: path, Message: fmt.Sprintf(format, args...)}
}

// decodeStrict decodes raw into dst by the platform's body rules
// (api.DecodeBytes, docs/platform-api.md "Shared rules": no unknown,
// repeated or case-folded properties, no null for a plain value, one JSON
// value). A refusal is code at path plus the
// first problem's JSON Pointer, worded "what: problem".
func decodeStrict(raw []byte, dst any, code, path, what string) error {
	err := api.DecodeBytes(raw, dst)
	var be *httpx.BodyError
	if errors.As(err, &be) && len(be.Diagnostics) > 0 {
		d := be.Diagnostics[0]
		return refuse(code, path+d.Pointer, "%s: %s", what, d.Message)
	}
	if err != nil {
		return refuse(code, path, "%s: %v", what, err)
	}
	return nil
}
