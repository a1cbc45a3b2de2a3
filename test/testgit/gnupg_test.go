package testgit

import (
	"fmt"
	"strings"
	"testing"
)

// recordingTB records what a test helper says instead of ending the test.
type recordingTB struct {
	testing.TB
	fatal, skip string
}

func (r *recordingTB) Helper()                           {}
func (r *recordingTB) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recordingTB) Skip(args ...any)                  { r.skip = fmt.Sprint(args...) }

// Without gpg, the OpenPGP tests skip saying how to install it, and fail
// under GITPEER_REQUIRE_GPG (CI), as the SSH tests do without sshd.
func TestGPGMissingSkipsOrFailsUnderTheCIVariable(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(RequireGPGEnv, "")
	r := &recordingTB{TB: t}
	GPG(r)
	if r.fatal != "" || !strings.Contains(r.skip, "apt-get install -y gnupg") {
		t.Errorf("without %s: fatal %q, skip %q", RequireGPGEnv, r.fatal, r.skip)
	}
	t.Setenv(RequireGPGEnv, "1")
	r = &recordingTB{TB: t}
	GPG(r)
	if !strings.Contains(r.fatal, "GITPEER_REQUIRE_GPG is set, so this is a failure") {
		t.Errorf("with %s=1: fatal %q, skip %q", RequireGPGEnv, r.fatal, r.skip)
	}
}
