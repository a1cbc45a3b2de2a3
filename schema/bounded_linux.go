package schema

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// evaluatorExecutable is the running binary itself, even if the file it
// was started from has since been replaced (an upgrade under a running
// reconciler): parent and evaluator always speak the same protocol.
func evaluatorExecutable() (string, error) { return "/proc/self/exe", nil }

// evaluatorProcAttr makes the kernel kill the evaluator when its parent
// dies, SIGKILL included, which the parent cannot catch.
func evaluatorProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// residentBytes is the VmRSS of process pid; false when it cannot be read
// (the process has exited).
func residentBytes(pid int) (uint64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:"))
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
		if err != nil {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
