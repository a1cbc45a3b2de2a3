// Package crashpoint is a test hook, and nothing else: a gitpeer process
// started with the environment variable GITPEER_CRASH_AT set to the name of
// a Step kills itself with SIGKILL the first time one of its passes reaches
// that step boundary, as a power cut or the OOM killer would stop it there.
// The crash-safety tests (cmd/gitpeer) use it to prove that the next pass
// converges from every boundary, and GITPEER_HANG_AT (HangEnv) makes a
// pass hang there instead. It is not a user feature and is not documented
// as one; with the variables unset, Reached does nothing.
package crashpoint

import (
	"os"
	"time"
)

// Env is the environment variable naming the Step to die at.
const Env = "GITPEER_CRASH_AT"

// Step is a boundary between two steps of a pass that leave state behind.
type Step string

// The step boundaries of a pass, in the order a pass that commits reaches
// them.
const (
	// PinsSaved: the pass is computed and its pins saved; nothing of it is
	// in the clone yet.
	PinsSaved Step = "pins-saved"
	// FilesWritten: the change's blobs and trees are in the clone's
	// objects, not committed.
	FilesWritten Step = "files-written"
	// Committed: committed in the clone (its local branch), not pushed.
	Committed Step = "committed"
	// Pushed: the shared branch is pushed, with the seal of its commit
	// when the host offers atomic pushes (gitsync's pushSealed); else
	// the applied branch is not moved yet.
	Pushed Step = "pushed"
	// Applied: the shared and the applied branch are pushed; the pass's
	// local effects (kubeconfigs) are not stored yet.
	Applied Step = "applied"
)

// Steps are all the steps, in order.
var Steps = []Step{PinsSaved, FilesWritten, Committed, Pushed, Applied}

// HangEnv is the environment variable naming the Step at which a pass
// blocks for good, deaf to its context, as a call that never returns
// would: the SIGTERM tests (cmd/gitpeer) use it to prove that a process
// stops within seconds whatever its pass is doing.
const HangEnv = "GITPEER_HANG_AT"

// target and hang are read once: the hook must cost nothing on a pass's
// path.
var (
	target = Step(os.Getenv(Env))
	hang   = Step(os.Getenv(HangEnv))
)

// Reached kills this process with SIGKILL when step is the one GITPEER_CRASH_AT
// names, and never returns when it is the one GITPEER_HANG_AT names;
// otherwise it returns at once.
func Reached(step Step) {
	if hang != "" && step == hang {
		for { // this goroutine only: the others (signals) go on
			time.Sleep(time.Hour)
		}
	}
	if target == "" || step != target {
		return
	}
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill() // SIGKILL on Unix; TerminateProcess on Windows
	}
	// The signal may be delivered a moment after kill(2) returns (to
	// another thread); nothing of this pass may run meanwhile.
	for {
		time.Sleep(time.Second)
	}
}
