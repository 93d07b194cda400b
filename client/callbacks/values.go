package callbacks

// States of a callback execution.
const (
	StatePending         = "PENDING"
	StateHeld            = "HELD_CIRCUIT_OPEN"
	StateSucceeded       = "SUCCEEDED"
	StateFailedRetrying  = "FAILED_RETRYING"
	StateFailedPermanent = "FAILED_PERMANENT"
	StateCancelled       = "CANCELLED"
)
