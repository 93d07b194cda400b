package sim

import (
	"errors"
	"strings"
	"testing"
)

// TestStrictDecoding: commands, test-data documents and mock outcomes go
// through the platform's one strict decoder, so each refusal names its
// code and the JSON Pointer of the problem, and what encoding/json would
// let through (a repeated key, a second value, a case-folded name, null for
// a plain value) is refused.
func TestStrictDecoding(t *testing.T) {
	t.Parallel()
	outcome := func(raw string) error { _, err := decodeOutcome([]byte(raw), "/mocks/node:a"); return err }
	command := func(raw string) error { _, err := DecodeCommand([]byte(raw)); return err }
	testData := func(raw string) error { _, err := DecodeTestData([]byte(raw)); return err }
	studio := func(raw string) error { _, err := DecodeStudioCommand([]byte(raw)); return err }
	mocks := func(raw string) error { _, err := DecodeMocks([]byte(raw), "/mocks"); return err }
	for _, tc := range []struct {
		decode      func(string) error
		raw         string
		code, path  string
		messageHint string
	}{
		{command, `{"next":{},"next":{}}`, CodeCommand, "/next", "more than once"},
		{command, `{"next":{}} {}`, CodeCommand, "", "after"},
		{command, `{"Next":{}}`, CodeCommand, "/Next", "unknown property"},
		{command, `{"advance_time":{"seconds":"soon"}}`, CodeCommand, "/advance_time/seconds", "must be an integer"},
		{command, `{"breakpoints":{"node_ids":[1]}}`, CodeCommand, "/breakpoints/node_ids/0", "string"},
		{command, `[1]`, CodeCommand, "", "object"},
		{testData, `{"schemaVersion":1,"input":{"source":"manual","extra":true}}`, CodeDocTestData, "/input/extra", "unknown property"},
		{testData, `{"schemaVersion":null}`, CodeDocTestData, "/schemaVersion", "must be an integer"},
		{studio, `{"advanceTime":{"seconds":1},"advanceTime":{"seconds":2}}`, CodeCommand, "/advanceTime", "more than once"},
		{studio, `{"next":{}} {}`, CodeCommand, "", "after"},
		{mocks, `{"node:a":{"output":1},"node:a":{"output":2}}`, CodeRequest, "/mocks/node:a", "more than once"},
		{mocks, `[1]`, CodeRequest, "/mocks", "object"},
		{outcome, `{"output":{},"retryable":"yes"}`, CodeRequest, "/mocks/node:a/retryable", "boolean"},
		{outcome, `{"error":{"code":"E","message":"m","code":"F"}}`, CodeRequest, "/mocks/node:a/error/code", "more than once"},
	} {
		err := tc.decode(tc.raw)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: got %v, want a refusal", tc.raw, err)
		}
		if e.Code != tc.code || e.Path != tc.path || !strings.Contains(e.Message, tc.messageHint) {
			t.Errorf("%s: got %s at %q (%s), want %s at %q mentioning %q", tc.raw, e.Code, e.Path, e.Message, tc.code, tc.path, tc.messageHint)
		}
	}
	// What the contract accepts still decodes.
	if err := command(`{"breakpoints":{"node_ids":[]}}`); err != nil {
		t.Fatal(err)
	}
	if err := studio(`{"advanceTime":{"seconds":1}}`); err != nil {
		t.Fatal(err)
	}
	if err := mocks(`{"node:a":[{"output":1},{"error":{"code":"E","message":"m"}}]}`); err != nil {
		t.Fatal(err)
	}
	if err := testData(`{"schemaVersion":1}`); err != nil {
		t.Fatal(err)
	}
	if err := outcome(`{"error":{"code":"E","message":"m"},"retryable":true}`); err != nil {
		t.Fatal(err)
	}
}
