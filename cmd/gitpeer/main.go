// Command gitpeer peers Liqo clusters through a Git repository: a reviewed
// spec declares who peers with whom, and each cluster's reconciler carries
// Liqo's authentication handshake (nonce → Tenant → Identity) as commits.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/schema"
)

// exitError carries an exit code: 1 for "checks found problems" (validate,
// verify), as a linter does, distinct from cobra's usage errors.
type exitError struct {
	code int
	err  error
	// silent: the command has already printed what went wrong.
	silent bool
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

// errProblems exits 1 after the command has printed the problems itself.
var errProblems = &exitError{code: 1, err: errors.New("problems found"), silent: true}

// withCode makes err exit with code, as commands whose exit status says
// something besides failure do (verify, status --exit-code, plan: 2 on
// error, as flux diff): printed problems stay silent.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return &exitError{code: code, err: ee.err, silent: ee.silent}
	}
	return &exitError{code: code, err: err}
}

func main() {
	schema.RunEvaluatorIfChild()
	stopProfile := startCPUProfile(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go exitAfterGrace(ctx, stopGrace, os.Stderr, os.Exit)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	stopProfile()
	os.Exit(code)
}

// stopGrace is how long a command has to return once SIGTERM or an
// interrupt ended its context: every step of a pass honours the context
// (fetch, push, spec evaluation, the daemon's loop), and this bounds what
// does not (a call that never returns), so that a Pod or a CronJob stops
// within seconds whatever its pass is doing. It leaves the daemon time to
// publish its last status and release its Lease (each bounded by a few
// seconds) and is well within a Pod's default 30 s grace period. A process killed there is no
// worse off than one the kernel kills: every pass converges after a kill
// at any point (the crash tests).
const stopGrace = 10 * time.Second

// stopExitCode is the exit code of a process stopped after stopGrace:
// 128 + SIGTERM, as a shell reports a process the signal ended.
const stopExitCode = 143

// exitAfterGrace calls exit(stopExitCode) with a line on stderr when the
// command has not returned grace after ctx ended; exit ends the process,
// so returning from main first is what stops it otherwise.
func exitAfterGrace(ctx context.Context, grace time.Duration, stderr io.Writer, exit func(int)) {
	<-ctx.Done()
	time.Sleep(grace)
	fmt.Fprintf(stderr, "gitpeer: stopped: the command did not end within %s of the signal\n", grace)
	exit(stopExitCode)
}

// run executes the CLI with args, returning the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWithInput(ctx, args, nil, stdout, stderr)
}

// runWithInput is run with stdin as the commands' standard input (nil:
// the process's).
func runWithInput(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	if stdin != nil {
		root.SetIn(stdin)
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !ee.silent {
			fmt.Fprintf(stderr, "gitpeer: %s\n", usageMessage(cmd, ee.err))
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "gitpeer: %s\n", usageMessage(cmd, err))
	return 1
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "gitpeer",
		Short: "Peer Liqo clusters through commits in a Git repository",
		Long: `gitpeer turns Liqo's inter-cluster authentication into GitOps.

A peering repo holds a CUE-validated spec (peering.cue) naming clusters and
peerings. Each cluster's reconciler commits its handshake artifacts (nonce,
Tenant, Identity) into per-cluster paths of that repo, so every hand-off of
Liqo's manual flow becomes a reviewable commit, applied by Flux or Argo CD.

GITPEER_CPUPROFILE=FILE writes a CPU profile of the command to FILE (go tool
pprof's format), e.g. to see where a reconcile --once process spends its time.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// An unknown command within two edits of one is suggested
		// (cobra's default, said here as it is relied on).
		SuggestionsMinimumDistance: 2,
		Version:                    buildVersion(),
	}
	// A template: text/template syntax in a version string is printed as is.
	root.SetVersionTemplate(strings.ReplaceAll(versionText(), "{{", `{{"{{"}}`))
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newInitCmd(),
		newValidateCmd(),
		newReconcileCmd(),
		newVerifyCmd(),
		newStatusCmd(),
		newWaitCmd(),
		newPlanCmd(),
		newDemoCmd(),
		newSchemaCmd(),
		newCodeownersCmd(),
		newTokenCmd(),
		newTrustCmd(),
		newRotateKeyCmd(),
		newAllowedSignersCmd(),
		newVersionCmd(),
	)
	setExamples(root)
	registerCompletions(root)
	return root
}

// dirArg is the optional [DIR] argument, "." by default.
func dirArg(args []string) string {
	if len(args) == 0 {
		return "."
	}
	return args[0]
}
