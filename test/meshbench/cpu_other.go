//go:build !unix

package meshbench

import "time"

// ProcessCPU is the CPU time this process has used: not measured here (0).
func ProcessCPU() time.Duration { return 0 }
