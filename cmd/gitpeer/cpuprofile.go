package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names a file to write a CPU profile of the whole command to
// (go tool pprof's format), for measuring a pass as a process (issue 21,
// hack/passbench). The spec evaluator's child process is not profiled: it
// exits in schema.RunEvaluatorIfChild before this is read.
const cpuProfileEnv = "GITPEER_CPUPROFILE"

// startCPUProfile starts the profile $GITPEER_CPUPROFILE asks for and
// returns the function that writes it out; without the variable it does
// nothing. A profile that cannot start is reported on stderr and the
// command runs unprofiled.
func startCPUProfile(stderr io.Writer) (stop func()) {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "gitpeer: %s: %v\n", cpuProfileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "gitpeer: %s: %v\n", cpuProfileEnv, err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "gitpeer: %s: %v\n", cpuProfileEnv, err)
		}
	}
}
