package activation

import "github.com/google/uuid"

// newUUID is a time-ordered (version 7) UUID in canonical lowercase form,
// so that lists in id order are also roughly in creation order.
func newUUID() string { return uuid.Must(uuid.NewV7()).String() }
