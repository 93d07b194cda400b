package broker

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data and the metadata needed to read it back (its
// size), not its timestamps: what bbolt does on Linux too.
func fdatasync(f *os.File) error {
	return syscall.Fdatasync(int(f.Fd()))
}
