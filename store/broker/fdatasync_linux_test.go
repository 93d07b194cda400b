package broker

import (
	"syscall"
	"testing"

	"github.com/matryer/is"
)

func TestFdatasyncRetriesEINTR(t *testing.T) {
	is := is.New(t)
	calls := 0
	err := retryEINTR(func() error {
		calls++
		if calls < 3 {
			return syscall.EINTR
		}
		return nil
	})
	is.NoErr(err)
	is.Equal(calls, 3)
	calls = 0
	err = retryEINTR(func() error { calls++; return syscall.EIO })
	is.Equal(err, syscall.EIO) // other errors are returned at once
	is.Equal(calls, 1)
}
