package httpx

import (
	"bytes"
	"testing"

	"github.com/matryer/is"
)

func TestCompactAnswerRoundTrip(t *testing.T) {
	is := is.New(t)
	owner := "01a21c20-e268-7e0f-a2b5-0072227047b4"
	scope := "POST /api/v1/tenants/01a21c20-e269-724f-b24e-6f4f90c1775b/projects/01a21c20-e269-7252-b753-a10f0410ba26/environments/01a21c20-e269-7253-a3e1-0d2bef7795cd/runs"
	refs := answerRefs(owner, scope)
	for _, v := range []string{
		`{"id":"x","environment_id":"01a21c20-e269-7253-a3e1-0d2bef7795cd","created_by":"01a21c20-e268-7e0f-a2b5-0072227047b4"}`,
		`{"Location":"/api/v1/tenants/01a21c20-e269-724f-b24e-6f4f90c1775b/projects/01a21c20-e269-7252-b753-a10f0410ba26/environments/01a21c20-e269-7253-a3e1-0d2bef7795cd/runs/1"}`,
		`{"nothing":"to replace"}`,
		"",
		"raw \x01 control \x1f bytes and 01a21c20-e268-7e0f-a2b5-0072227047b4", // kept as is
	} {
		c := compactAnswer([]byte(v), refs)
		got, err := expandAnswer(c, refs)
		is.NoErr(err)
		is.Equal(string(got), v)
		if bytes.Contains([]byte(v), []byte(owner)) && v[0] == '{' {
			is.True(len(c) < len(v)-30) // the owner, at least, became one byte
			is.Equal(c[0], byte(answerMark))
		}
	}
	// An answer stored before compact records (no mark) reads as stored.
	got, err := expandAnswer([]byte(`{"a":1}`), refs)
	is.NoErr(err)
	is.Equal(string(got), `{"a":1}`)
	// A reference the scope cannot fill is an error, not a wrong answer.
	_, err = expandAnswer([]byte{answerMark, refBase + 20}, refs)
	is.True(err != nil)
	// In a table without compact answers (no refs) the mark byte is data.
	got, err = expandAnswer([]byte{answerMark, refBase}, nil)
	is.NoErr(err)
	is.Equal(got, []byte{answerMark, refBase})
	// Owner, scope and key are separated: moving text between them changes the id.
	is.True(!bytes.Equal(IdempotencyID("ab", "c", "d"), IdempotencyID("a", "bc", "d")))
	is.True(!bytes.Equal(IdempotencyID("a", "bc", "d"), IdempotencyID("a", "b", "cd")))
	is.Equal(len(IdempotencyID("a", "b", "c")), 16)
}
