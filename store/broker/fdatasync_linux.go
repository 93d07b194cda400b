package broker

import (
	"errors"
	"os"
	"syscall"
)

// fdatasync flushes f's data and the metadata needed to read it back (its
// size), not its timestamps: what bbolt does on Linux too.
func fdatasync(f *os.File) error {
	return retryEINTR(func() error { return syscall.Fdatasync(int(f.Fd())) })
}

// retryEINTR calls sync again while a signal interrupts it, as os.File.Sync
// does (the Go runtime's preemption signals make EINTR ordinary).
func retryEINTR(sync func() error) error {
	for {
		if err := sync(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
