//go:build unix

package meshbench

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time this process has used, user and system.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
