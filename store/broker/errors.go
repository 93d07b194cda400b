package broker

import "errors"

// Errors returned by both implementations; test with errors.Is.
var (
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("broker: closed")
	// ErrInvalidTopic reports a topic name outside the Kafka-compatible rules
	// (see ValidateTopic), so that topics work unchanged on either implementation.
	ErrInvalidTopic = errors.New("broker: invalid topic")
	// ErrInvalidPattern reports a subscription pattern that is neither a topic
	// name nor a prefix followed by a single trailing '*'.
	ErrInvalidPattern = errors.New("broker: invalid pattern")
	// ErrInvalidGroup reports an empty, oversized or non-UTF-8 consumer group name.
	ErrInvalidGroup = errors.New("broker: invalid group")
	// ErrInvalidArgument reports any other unusable argument (nil handler, limit <= 0, ...).
	ErrInvalidArgument = errors.New("broker: invalid argument")
	// ErrMessageTooLarge reports a message larger than the configured maximum.
	ErrMessageTooLarge = errors.New("broker: message too large")
	// ErrHandlerTimeout is the failure recorded when a handler does not return
	// within the redelivery timeout; the message is delivered again.
	ErrHandlerTimeout = errors.New("broker: handler timed out")
	// ErrHandlerPanic is the failure recorded when a handler panics; the panic
	// is contained so one bad message cannot take the daemon down.
	ErrHandlerPanic = errors.New("broker: handler panicked")
	// ErrGroupActive is returned by DeleteGroup while the group has subscriptions.
	ErrGroupActive = errors.New("broker: group has active subscriptions")
	// ErrUnsupported reports an operation the implementation cannot provide
	// for the given topic (e.g. Read on a multi-partition Kafka topic).
	ErrUnsupported = errors.New("broker: unsupported")
	// ErrCorrupt reports a stored record that cannot be decoded.
	ErrCorrupt = errors.New("broker: corrupt record")
)
