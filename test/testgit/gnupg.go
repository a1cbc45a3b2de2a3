package testgit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GnuPG is a throwaway GnuPG home for a test: real gpg, as `git
// verify-commit` and Argo CD run it, with a keyring of its own.
type GnuPG struct {
	t testing.TB
	// Home is the GNUPGHOME directory.
	Home string
}

// RequireGPGEnv, when set to a non-empty value, turns a missing gpg into a
// test failure instead of a skip, as RequireSSHDEnv does for sshd: CI sets
// it after `make deps` installed GnuPG, so that the OpenPGP tests cannot
// vanish silently.
const RequireGPGEnv = "GITPEER_REQUIRE_GPG"

// GPG returns the path of GnuPG's gpg. When there is none, the test is
// skipped with a message saying how to install it, or fails when
// RequireGPGEnv is set.
func GPG(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("gpg"); err == nil {
		return p
	}
	msg := "GnuPG's gpg is not installed: the OpenPGP tests need it " +
		"(Debian: apt-get install -y gnupg, or run `make deps` as root)"
	if os.Getenv(RequireGPGEnv) != "" {
		t.Fatalf("%s; %s is set, so this is a failure", msg, RequireGPGEnv)
	}
	t.Skip("SKIP: " + msg)
	return ""
}

// NewGnuPG makes an empty GnuPG home, skipping the test when gpg is not
// installed (failing it under RequireGPGEnv, see GPG). Any gpg-agent
// started in it is stopped when the test ends.
func NewGnuPG(t testing.TB) *GnuPG {
	t.Helper()
	GPG(t)
	// Short, under /tmp: gpg-agent's socket path must fit a sockaddr_un.
	home, err := os.MkdirTemp("", "gnupg-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	g := &GnuPG{t: t, Home: home}
	t.Cleanup(func() {
		if _, err := exec.LookPath("gpgconf"); err == nil {
			cmd := exec.Command("gpgconf", "--kill", "all")
			cmd.Env = g.Env()
			_ = cmd.Run()
		}
		_ = os.RemoveAll(home)
	})
	return g
}

// Env is the environment that points gpg (and git's gpg calls) at Home,
// with the C locale so that output reads the same everywhere and no global
// or system Git configuration.
func (g *GnuPG) Env() []string {
	return append(os.Environ(), "GNUPGHOME="+g.Home, "LC_ALL=C", "LANGUAGE=C", "TZ=UTC",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
}

// Run runs gpg --batch with args in Home and returns its combined output;
// the test fails when gpg does.
func (g *GnuPG) Run(args ...string) string {
	g.t.Helper()
	out, err := g.Try(args...)
	if err != nil {
		g.t.Fatalf("gpg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Try is Run that returns gpg's error instead of failing the test.
func (g *GnuPG) Try(args ...string) (string, error) {
	cmd := exec.Command("gpg", append([]string{"--batch", "--no-tty"}, args...)...)
	cmd.Env = g.Env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Import imports armored public keys into the keyring and returns gpg's
// report.
func (g *GnuPG) Import(armored []byte) string {
	g.t.Helper()
	f := filepath.Join(g.Home, "import.asc")
	if err := os.WriteFile(f, armored, 0o600); err != nil {
		g.t.Fatal(err)
	}
	return g.Run("--import", f)
}

// Git runs git in dir with this GnuPG home and returns its combined output
// and error.
func (g *GnuPG) Git(dir string, args ...string) (string, error) {
	cmd := Command(dir, args...)
	cmd.Env = append(cmd.Env, "GNUPGHOME="+g.Home, "LANGUAGE=C", "TZ=UTC")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// GenerateKey makes a signing key (Ed25519, no passphrase, no expiry) for
// userID in the keyring, as a person would with gpg --quick-gen-key, and
// returns its fingerprint.
func (g *GnuPG) GenerateKey(userID string) string {
	g.t.Helper()
	g.Run("--passphrase", "", "--pinentry-mode", "loopback", "--quick-gen-key", userID, "ed25519", "sign", "never")
	for _, line := range strings.Split(g.Run("--with-colons", "--list-secret-keys", userID), "\n") {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" {
			return f[9]
		}
	}
	g.t.Fatalf("gpg made no key for %q", userID)
	return ""
}
