package httpx

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestServe(t *testing.T) {
	is := is.New(t)
	type in struct {
		N int `json:"n"`
	}
	type out struct {
		ID string `json:"id"`
	}
	double := func(_ context.Context, r in) (out, error) {
		if r.N < 0 {
			return out{}, Errorf(EINVALID, "negative")
		}
		return out{ID: strings.Repeat("x", r.N)}, nil
	}
	call := func(h HandlerFunc, body string) (*httptest.ResponseRecorder, error) {
		w := httptest.NewRecorder()
		return w, h(w, httptest.NewRequest("POST", "/", strings.NewReader(body)), nil)
	}

	w, err := call(Serve(JSONBody[in](DecodeOptions{}), double, 202), `{"n":2}`)
	is.NoErr(err)
	is.Equal(w.Code, 202)
	is.Equal(w.Body.String(), `{"id":"xx"}`+"\n")
	is.Equal(w.Header().Get("Location"), "")

	w, err = call(ServeCreated(JSONBody[in](DecodeOptions{}), double, func(o out) string { return "/things/" + o.ID }), `{"n":1}`)
	is.NoErr(err)
	is.Equal(w.Code, 201)
	is.Equal(w.Header().Get("Location"), "/things/x")

	// A refused request or a refusing call writes nothing: the surface
	// encodes the error.
	var be *BodyError
	w, err = call(Serve(JSONBody[in](DecodeOptions{}), double, 200), `{"n":"x"}`)
	is.True(errors.As(err, &be))
	is.Equal(w.Body.Len(), 0)
	w, err = call(Serve(JSONBody[in](DecodeOptions{}), double, 200), `{"n":-1}`)
	is.Equal(ErrorCode(err), EINVALID)
	is.Equal(w.Body.Len(), 0)
}
