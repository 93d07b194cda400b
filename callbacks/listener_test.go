package callbacks

import (
	"net/http"
	"testing"
	"time"
)

// TestListenerDefaultsHonoured: CALLBACK_LISTENER_TOPICS and
// CALLBACK_LISTENER_GROUP_ID are what a subscription without topic or group
// consumes with.
func TestListenerDefaultsHonoured(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, map[string]string{
		"CALLBACK_LISTENER_TOPICS":   "orders.*, audit",
		"CALLBACK_LISTENER_GROUP_ID": "my-callbacks",
	})
	rc := newReceiver(t, func(int, *http.Request) (int, http.Header, string) { return 200, nil, "" })
	h.authorize("127.0.0.1")
	h.createConfig(map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"*"}})
	sub := h.createSub(map[string]any{"name": "defaults"})
	is.Equal(sub.ConsumerGroupID, "my-callbacks")
	is.Equal(sub.TopicOrQueue, "")
	h.publish("orders.eu", "a", "", `{"n":1}`)
	h.publish("audit", "b", "", `{"n":2}`)
	h.publish("other", "c", "", `{"n":3}`)
	waitFor(t, 15*time.Second, "two deliveries", func() bool { return rc.count() == 2 })
	time.Sleep(100 * time.Millisecond)
	is.Equal(rc.count(), 2) // "other" is not a listener topic
	got := map[string]bool{}
	for _, e := range h.executions() {
		got[e.EventType] = true
	}
	is.True(got["a"] && got["b"] && !got["c"])
}
