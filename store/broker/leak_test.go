package broker

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// ownGoroutines returns the stacks of goroutines running broker or franz-go
// client code.
func ownGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "ownGoroutines") {
			continue
		}
		if strings.Contains(g, "store/broker.(*") || strings.Contains(g, "store/broker.runHandler") || strings.Contains(g, "franz-go/pkg/kgo.") {
			out = append(out, g)
		}
	}
	return out
}

// TestCloseLeavesNoGoroutines runs a full life cycle on each implementation,
// with a handler that outlives its redelivery timeout, and checks that
// nothing of it is left running after Close.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	impls := []struct {
		name string
		open func(t *testing.T) Broker
	}{
		{"bolt", func(t *testing.T) Broker { return newBoltEnv(t, testBoltOptions()).open() }},
		// The journal's writer and applier stop on Close too.
		{"bolt-journal", func(t *testing.T) Broker { return newBoltEnv(t, journalOptions(t)).open() }},
		{"kafka", func(t *testing.T) Broker { return newTestKafka(t, testKafkaOptions(newTestCluster(t))) }},
	}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			is := is.New(t)
			b := impl.open(t)
			slow := make(chan struct{})
			r := newRecorder(func(ctx context.Context, m Message) error {
				if string(m.Value) == "slow" && Attempt(ctx) == 1 {
					<-slow // abandoned after the redelivery timeout
				}
				return nil
			})
			s1 := subscribe(t, b, "g1", []string{"leak.*"}, r.handle)
			subscribe(t, b, "g2", []string{"*"}, func(context.Context, Message) error { return nil })
			is.NoErr(b.Publish(t.Context(), msgs("leak.a", "m", "slow", "n")...))
			waitUntil(t, "redelivery of the slow message", func() bool { return r.count("slow") >= 2 })
			r.waitValues(t, "m", "n")
			close(slow) // Close waits for abandoned handlers too
			is.NoErr(s1.Close())
			is.NoErr(b.Close())
			deadline := time.Now().Add(waitLong)
			for left := ownGoroutines(); len(left) > 0; left = ownGoroutines() {
				if time.Now().After(deadline) {
					t.Fatalf("%d goroutines left after Close:\n%s", len(left), strings.Join(left, "\n\n"))
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
