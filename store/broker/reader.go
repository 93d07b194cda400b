package broker

import "context"

// Reader reads a topic's log without a consumer group and without affecting
// any group's offsets: for tailing a topic and listing dead letters.
type Reader interface {
	// Read returns up to limit (1 to 10,000) messages of topic with offsets
	// >= fromOffset, in offset order. Offsets older than the oldest retained message are
	// skipped, so the first returned offset may be greater than fromOffset.
	// An unknown topic yields no messages and no error.
	Read(ctx context.Context, topic string, fromOffset int64, limit int) ([]Message, error)
	// Latest returns the offset the next message published to topic will
	// get (the log end offset): 0 for an unknown or empty topic.
	Latest(ctx context.Context, topic string) (int64, error)
}

// Both implementations provide Reader.
var (
	_ Broker = (*Bolt)(nil)
	_ Reader = (*Bolt)(nil)
	_ Broker = (*Kafka)(nil)
	_ Reader = (*Kafka)(nil)
)

// maxReadLimit caps one Read so a careless caller cannot load a whole topic.
const maxReadLimit = 10_000
