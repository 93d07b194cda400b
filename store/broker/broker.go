// Package broker defines the publish/subscribe contract the daemon's subsystems
// use in place of Kafka, and its implementations: a durable in-process broker on
// bbolt (the default) and a Kafka one on franz-go for users who outgrow one machine.
package broker

import (
	"context"
	"time"
)

// Message is one record on a topic. Offset and Timestamp are assigned by the
// broker on publish; callers leave them zero.
type Message struct {
	Topic     string            `json:"topic"`
	Key       string            `json:"key,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Value     []byte            `json:"value"`
	Offset    int64             `json:"offset"`
	Timestamp time.Time         `json:"timestamp"`
}

// Publisher appends messages to topics. When Publish returns nil every message
// is durable: it survives a crash or SIGKILL of the process. Publish keeps no
// reference to the messages' memory once it has returned: the caller may
// reuse their values and header maps (ingest recycles its body buffers).
type Publisher interface {
	Publish(ctx context.Context, msgs ...Message) error
}

// Handler handles one delivered message. Returning nil acknowledges it;
// returning an error (or not returning before the redelivery timeout) makes the
// broker deliver it again later: delivery is at least once.
type Handler func(ctx context.Context, m Message) error

// Subscriber consumes topics as a consumer group. Patterns are exact topic names
// or a prefix followed by a trailing '*' ("*" alone matches every topic).
// Each group has its own offsets; two subscriptions with the same group share the work.
type Subscriber interface {
	Subscribe(ctx context.Context, group string, patterns []string, h Handler) (Subscription, error)
}

// Subscription is a running consumer; Close stops it and waits for in-flight handlers.
type Subscription interface {
	Close() error
}

// Broker is the full contract an implementation provides.
type Broker interface {
	Publisher
	Subscriber
	// Topics lists the topics that have at least one message.
	Topics(ctx context.Context) ([]string, error)
	Close() error
}
