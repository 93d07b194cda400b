package daemon

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// withBodyDeadline gives a request's body a read deadline: all of it must
// arrive within d of the handler starting, or the handler's next Read fails
// with a timeout (os.ErrDeadlineExceeded) and the connection is closed. A
// slow client then cannot hold a connection and its buffers for ever
// (issue 20, item 1).
//
// http.Server.ReadTimeout is not used: it also bounds the connection's
// background read while a handler runs, and when that read times out the
// server cancels the request's context, which would end SSE streams after d.
// Here the deadline is cleared as soon as the body has been read to its end,
// and requests without a body (GET, SSE) get none.
func withBodyDeadline(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d <= 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the read deadline once the body has been read whole,
// so a handler that goes on to stream is not cut.
type deadlineBody struct {
	io.ReadCloser
	once  sync.Once
	clear func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(b.clear)
	}
	return n, err
}
