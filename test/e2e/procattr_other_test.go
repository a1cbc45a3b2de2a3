//go:build e2e && !linux

package e2e

import "syscall"

// dieWithParent has no portable equivalent outside Linux: stop() and the
// signal handler are what stop the suite's processes there.
func dieWithParent() *syscall.SysProcAttr { return nil }
