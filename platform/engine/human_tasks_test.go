package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestAssignedTo(t *testing.T) {
	is := is.New(t)
	id := "0190a0b0-0000-7000-8000-000000000001"
	is.True(assignedTo([]string{id}, id))
	is.True(assignedTo([]string{"group:finance", "user:" + id}, id))
	is.True(!assignedTo([]string{"group:finance", "alice"}, id))
	is.True(!assignedTo([]string{"user:" + id + "x", "USER:" + id}, id))
	is.True(!assignedTo(nil, id))
}

func TestCheckComplete(t *testing.T) {
	is := is.New(t)
	data, err := checkComplete(&HumanCompleteRequest{Decision: "approve", Data: json.RawMessage(" {\"a\": [1, 2]} ")})
	is.NoErr(err)
	is.Equal(string(data), `{"a":[1,2]}`)
	for _, raw := range []string{"", "null", " null "} {
		data, err = checkComplete(&HumanCompleteRequest{Decision: "approve", Data: json.RawMessage(raw)})
		is.NoErr(err)
		is.Equal(data, nil)
	}
	_, err = checkComplete(&HumanCompleteRequest{Decision: strings.Repeat("d", MaxDecisionLen)})
	is.NoErr(err)
	for _, req := range []HumanCompleteRequest{
		{Decision: ""},
		{Decision: " \t"},
		{Decision: strings.Repeat("d", MaxDecisionLen+1)},
		{Decision: "approve", Data: json.RawMessage(`{"a":` + strings.Repeat(" ", MaxInputBytes) + `1}`)},
	} {
		_, err := checkComplete(&req)
		is.True(err != nil)
	}
}
