//go:build unix

package lang

import "syscall"

// processCPUMillis is the CPU time the test process has used, so that the
// benchmark can report cost independently of other load on the machine.
func processCPUMillis() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}
