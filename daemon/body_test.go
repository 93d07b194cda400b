package daemon_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
)

// probe is a subsystem whose routes read bodies and stream, on both listeners.
type probe struct{}

func (probe) Start(context.Context) error { return nil }
func (probe) Close() error                { return nil }
func (probe) Routes(bridge, services *httprouter.Router) {
	for _, r := range []*httprouter.Router{bridge, services} {
		r.POST("/probe/read", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
			b, err := io.ReadAll(r.Body)
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				w.WriteHeader(http.StatusRequestTimeout)
			case err != nil:
				w.WriteHeader(http.StatusBadRequest)
			}
			fmt.Fprintf(w, "read %d", len(b))
		})
		stream := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
			if _, err := io.ReadAll(r.Body); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			// Stream for three body deadlines: the request must stay alive.
			end := time.Now().Add(3 * bodyTimeout)
			for time.Now().Before(end) {
				if r.Context().Err() != nil {
					return
				}
				fmt.Fprint(w, ".")
				http.NewResponseController(w).Flush()
				time.Sleep(bodyTimeout / 5)
			}
			fmt.Fprint(w, "done")
		}
		r.GET("/probe/panic", func(http.ResponseWriter, *http.Request, httprouter.Params) { panic("probe") })
		r.POST("/probe/stream", stream)
		r.GET("/probe/stream", stream)
	}
}

const bodyTimeout = 400 * time.Millisecond

func startProbe(t *testing.T) *daemon.Daemon {
	t.Helper()
	cfg := testConfig()
	cfg.Listen.BodyReadTimeout = config.Duration(bodyTimeout)
	d, err := daemon.Start(context.Background(), daemon.Options{
		DataDir: t.TempDir(), Config: cfg, DisableKeyring: true,
		Subsystems: []daemon.Factory{func(daemon.Deps) (daemon.Subsystem, error) { return probe{}, nil }},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Shutdown() })
	return d
}

// A body that stops arriving, or trickles in a byte at a time, is cut at
// listen.body-read-timeout on both listeners: the handler's read fails, the
// client gets its answer and the connection is closed.
func TestSlowBodyIsCut(t *testing.T) {
	t.Parallel()
	d := startProbe(t)
	for _, base := range []string{d.State().BridgeURL, d.State().ServicesURL} {
		for _, drip := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s drip=%t", base, drip), func(t *testing.T) {
				is := is.New(t)
				u, _ := url.Parse(base)
				c, err := net.Dial("tcp", u.Host)
				is.NoErr(err)
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				began := time.Now()
				fmt.Fprintf(c, "POST /probe/read HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\n0123456789", u.Host)
				stop := make(chan struct{})
				defer close(stop)
				if drip { // a byte every 50 ms: the deadline is for the whole body
					go func() {
						for i := 0; i < 80; i++ {
							select {
							case <-stop:
								return
							case <-time.After(50 * time.Millisecond):
							}
							if _, err := c.Write([]byte("x")); err != nil {
								return
							}
						}
					}()
				}
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				is.NoErr(err) // no answer: the body was never cut
				took := time.Since(began)
				body, _ := io.ReadAll(resp.Body)
				is.Equal(resp.StatusCode, http.StatusRequestTimeout)
				is.True(strings.HasPrefix(string(body), "read "))
				is.True(took >= bodyTimeout && took < bodyTimeout+3*time.Second)
				// The server closed the connection.
				_, err = c.Read(make([]byte, 1))
				is.True(err != nil)
			})
		}
	}
}

// The deadline bounds reading the body only: a handler that streams after
// reading its body, or a stream without a body (SSE), outlives it.
func TestBodyDeadlineSparesStreams(t *testing.T) {
	t.Parallel()
	d := startProbe(t)
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		t.Run(method, func(t *testing.T) {
			is := is.New(t)
			var body io.Reader
			if method == http.MethodPost {
				body = strings.NewReader(`{"x":1}`)
			}
			req, _ := http.NewRequest(method, d.State().ServicesURL+"/probe/stream", body)
			resp, err := http.DefaultClient.Do(req)
			is.NoErr(err)
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			is.NoErr(err)
			is.Equal(resp.StatusCode, http.StatusOK)
			is.True(strings.HasSuffix(string(got), "done")) // the stream was not cut
		})
	}
}
