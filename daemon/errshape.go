package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentbridge/bridge/httpx"
)

// Error shapes of the two listeners: the bridge answers
// {"error":{"code","message"}} (docs/bridge-api.md), the services listener
// application/problem+json (docs/platform-api.md). Everything the daemon itself answers
// (unknown routes, refused hosts, panics, and the errors Go's HTTP server
// writes before any handler runs) uses the listener's shape.
type errorShape struct {
	name    string
	write   func(w http.ResponseWriter, r *http.Request, status int, code, msg string)
	code    func(status int) string // for errors with no code of their own
	problem bool
}

var (
	bridgeShape = errorShape{
		name: "bridge",
		write: func(w http.ResponseWriter, _ *http.Request, status int, code, msg string) {
			httpx.WriteJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
		},
		code: func(status int) string {
			switch status {
			case http.StatusRequestHeaderFieldsTooLarge:
				return "headers_too_large"
			case http.StatusInternalServerError:
				return "internal"
			}
			if status < 500 {
				return "invalid_request"
			}
			return "unsupported"
		},
	}
	servicesShape = errorShape{
		name: "services",
		write: func(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
			httpx.WriteProblem(w, r, &httpx.Problem{Status: status, Code: code, Message: msg})
		},
		code: func(status int) string {
			switch status {
			case http.StatusRequestHeaderFieldsTooLarge:
				return "PF-HEADERS-TOO-LARGE"
			case http.StatusInternalServerError:
				return "PF-INTERNAL"
			}
			if status < 500 {
				return "PF-BAD-REQUEST"
			}
			return "PF-UNSUPPORTED"
		},
		problem: true,
	}
)

// panicHandler answers a handler's panic with a 500 in the listener's shape
// and logs it; http.ErrAbortHandler keeps its meaning (abort the response).
func (s errorShape) panicHandler(log *slog.Logger) func(http.ResponseWriter, *http.Request, any) {
	return func(w http.ResponseWriter, r *http.Request, v any) {
		if v == http.ErrAbortHandler {
			panic(v)
		}
		log.Error("handler panic", "listener", s.name, "method", r.Method, "path", r.URL.Path, "request_id", httpx.RequestID(r), "panic", fmt.Sprint(v))
		s.write(w, r, http.StatusInternalServerError, s.code(http.StatusInternalServerError), "internal error; see the daemon log")
	}
}

// Go's server answers some requests before any handler can: a request line
// or headers over MaxHeaderBytes (431), a malformed request or a missing
// Host (400), an unsupported Transfer-Encoding (501), an unsupported HTTP
// version (505). It writes them straight to the connection as text/plain,
// in one Write of exactly this form, and there is no hook to change them.
// shapedConn recognises that Write and writes the same status in the
// listener's shape instead: the status line directly followed by these very
// headers (a handler's response has Date first), and as body the status
// line again (the 501's body is its own text).
//
// MaxHeaderBytes alone cannot do it: raised, it only moves the limit past
// which Go answers, and lets every connection hold that much in headers.
const (
	goErrorPrefix  = "HTTP/1.1 "
	goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
)

// shapedListener wraps each accepted connection in a shapedConn.
type shapedListener struct {
	net.Listener
	shape        errorShape
	maxHeaderKiB int
}

func (l shapedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &shapedConn{Conn: c, l: l}, nil
}

type shapedConn struct {
	net.Conn
	l shapedListener
}

// CloseWrite keeps what net/http does with a *net.TCPConn: it half-closes
// before hanging up on a client still sending (a 431, a 413), so the client
// reads the answer instead of a reset.
func (c *shapedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom keeps the TCP connection's sendfile/splice path for response
// bodies (headers have gone through Write by then).
func (c *shapedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

func (c *shapedConn) Write(p []byte) (int, error) {
	if !bytes.HasPrefix(p, []byte(goErrorPrefix)) {
		return c.Conn.Write(p)
	}
	statusLine, body, ok := bytes.Cut(p[len(goErrorPrefix):], []byte(goErrorHeaders))
	if !ok || len(statusLine) < 3 || bytes.ContainsAny(statusLine, "\r\n") ||
		!(bytes.Equal(body, statusLine) || string(body) == "Unsupported transfer encoding") {
		return c.Conn.Write(p)
	}
	status, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || status < 400 || status > 599 {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(c.l.render(status, string(body))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// render is a complete HTTP/1.1 response for status in the listener's shape.
func (l shapedListener) render(status int, text string) []byte {
	msg := strings.TrimSpace(text)
	if code, rest, ok := strings.Cut(msg, " "); ok && code == strconv.Itoa(status) {
		msg = rest // "400 Bad Request: missing required Host header" → "Bad Request: ..."
	}
	if status == http.StatusRequestHeaderFieldsTooLarge {
		msg = fmt.Sprintf("the request line and headers exceed %d KiB", l.maxHeaderKiB)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	var body []byte
	if l.shape.problem {
		id := httpx.NewRequestID()
		fmt.Fprintf(&b, "Cache-Control: no-store\r\nX-Request-ID: %s\r\nX-Platform-Request-ID: %s\r\n", id, id)
		body, _ = json.Marshal(httpx.Problem{Status: status, Code: l.shape.code(status), Message: msg, RequestID: id, Diagnostics: []any{}})
		b.WriteString("Content-Type: application/problem+json\r\n")
	} else {
		body, _ = json.Marshal(map[string]any{"error": map[string]string{"code": l.shape.code(status), "message": msg}})
		b.WriteString("Content-Type: application/json\r\n")
	}
	body = append(body, '\n')
	fmt.Fprintf(&b, "Connection: close\r\nContent-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}
