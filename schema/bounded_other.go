//go:build !linux

package schema

import (
	"os"
	"syscall"
)

// evaluatorExecutable is the running binary's path.
func evaluatorExecutable() (string, error) { return os.Executable() }

// evaluatorProcAttr sets nothing: only Linux has a parent-death signal.
func evaluatorProcAttr() *syscall.SysProcAttr { return nil }

// residentBytes is not available: outside Linux only the evaluator's Go
// memory limit and the size of its answer bound its memory.
func residentBytes(int) (uint64, bool) { return 0, false }
