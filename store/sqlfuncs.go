package store

import (
	"crypto/sha256"
	"database/sql/driver"
	"fmt"
	"sync"

	"modernc.org/sqlite"
)

// SQL functions the schema's migrations need and SQLite lacks. modernc's
// registry is per process, so they are registered once, before the first
// pool opens; a function is deterministic and reads nothing but its
// arguments.
var registerFuncs = sync.OnceValue(func() error {
	// bridge_sha256(x): the SHA-256 of x's bytes (text as UTF-8), a blob;
	// migration 0034 keys idempotency records by a hash of their owner,
	// scope and key (httpx.IdempotencyID).
	return sqlite.RegisterDeterministicScalarFunction("bridge_sha256", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		var sum [sha256.Size]byte
		switch v := args[0].(type) {
		case string:
			sum = sha256.Sum256([]byte(v))
		case []byte:
			sum = sha256.Sum256(v)
		case nil:
			return nil, nil
		default:
			sum = sha256.Sum256(fmt.Append(nil, v))
		}
		return sum[:], nil
	})
})
