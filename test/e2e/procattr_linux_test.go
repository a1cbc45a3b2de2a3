//go:build e2e

package e2e

import "syscall"

// dieWithParent makes a child the suite starts itself die with the test
// process, even when go test's -timeout kills it without cleanup.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
