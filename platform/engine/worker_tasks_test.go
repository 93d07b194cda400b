package engine

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/kernel"
)

func TestReportHash(t *testing.T) {
	is := is.New(t)
	hash := func(outcome string, e kernel.Event) []byte {
		h, err := reportHash(outcome, e)
		is.NoErr(err)
		return h
	}
	done := func(out string) kernel.Event {
		return kernel.Event{Kind: kernel.EventTaskCompleted, Output: json.RawMessage(out)}
	}
	// The output's formatting and key order do not matter; its values do,
	// big numbers included.
	is.True(bytes.Equal(hash(endCompleted, done(`{"a":1,"b":[true,null]}`)), hash(endCompleted, done(" { \"b\" : [true, null], \"a\": 1 } "))))
	is.True(!bytes.Equal(hash(endCompleted, done(`{"a":1}`)), hash(endCompleted, done(`{"a":2}`))))
	is.True(!bytes.Equal(hash(endCompleted, done(`{"n":12345678901234567890}`)), hash(endCompleted, done(`{"n":12345678901234567891}`))))
	fail := func(code string, retry bool) kernel.Event {
		return kernel.Event{Kind: kernel.EventTaskFailed, Error: &kernel.TaskError{Code: code}, Retryable: retry}
	}
	is.True(bytes.Equal(hash(endFailed, fail("E", true)), hash(endFailed, fail("E", true))))
	is.True(!bytes.Equal(hash(endFailed, fail("E", true)), hash(endFailed, fail("E", false))))
	is.True(!bytes.Equal(hash(endFailed, fail("E", true)), hash(endFailed, fail("F", true))))
	is.True(!bytes.Equal(hash(endFailed, fail("E", false)), hash(endCompleted, kernel.Event{})))
	_, err := reportHash(endCompleted, done(`{`))
	is.True(err != nil)
}

func TestCheckClaimDefaults(t *testing.T) {
	is := is.New(t)
	n, lease, err := checkClaim(&ClaimRequest{WorkerID: "w", Queues: []string{"billing", "rates.eu-1"}})
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(lease.Seconds(), float64(DefaultLeaseSeconds))
	for _, q := range []string{"", "1x", "a b", "é"} {
		_, _, err := checkClaim(&ClaimRequest{WorkerID: "w", Queues: []string{q}})
		is.True(err != nil)
	}
}

func TestWorkerQueue(t *testing.T) {
	is := is.New(t)
	q, err := workerQueue(&kernel.TaskSpec{Binding: json.RawMessage(`{"type":"worker","queue":"billing"}`)})
	is.NoErr(err)
	is.Equal(q, "billing")
	_, err = workerQueue(&kernel.TaskSpec{Binding: json.RawMessage(`{"type":"worker"}`)})
	is.True(err != nil)
	_, err = workerQueue(&kernel.TaskSpec{})
	is.True(err != nil)
}
