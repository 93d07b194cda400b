package callbacks

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"sync"

	"github.com/agentbridge/bridge/store/broker"
)

func readAll(r *http.Request) ([]byte, error) { return io.ReadAll(r.Body) }

func nopBody(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

func brokerMsg(topic, value string) broker.Message {
	return broker.Message{Topic: topic, Value: []byte(value)}
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// safeBuffer is a bytes.Buffer safe for concurrent writers (a logger).
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
