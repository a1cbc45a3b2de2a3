package testgit

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"
)

// RequireSSHDEnv, when set to a non-empty value, turns a missing sshd into
// a test failure instead of a skip: `make test` sets it after `make deps`
// installed OpenSSH's server, so that the SSH tests cannot vanish silently.
const RequireSSHDEnv = "GITPEER_REQUIRE_SSHD"

// SSHD returns the path of OpenSSH's sshd. When there is none, the test is
// skipped with a message saying how to install it, or fails when
// RequireSSHDEnv is set.
func SSHD(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	msg := "OpenSSH's sshd is not installed: the SSH transport tests need it " +
		"(Debian: apt-get install -y openssh-server, or run `make deps` as root)"
	if os.Getenv(RequireSSHDEnv) != "" {
		t.Fatalf("%s; %s is set, so this is a failure", msg, RequireSSHDEnv)
	}
	t.Skip("SKIP: " + msg)
	return ""
}

// SSHServer is a running OpenSSH sshd on 127.0.0.1 that lets its deploy
// keys run git-upload-pack and git-receive-pack (through git-shell, nothing
// else) on the bare repositories under Root, as the test's own user.
type SSHServer struct {
	// Addr is host:port of the server.
	Addr string
	// User is the login name clients use (the test's user).
	User string
	// Root is the directory of the bare repositories.
	Root string
	// HostKey is the server's host key.
	HostKey Key
	// KnownHosts is a known_hosts line for Addr and HostKey, with newline.
	KnownHosts []byte

	log *SyncBuffer
}

// StartSSHD starts sshd as a foreground process with its own config, host
// key and authorized_keys holding deployKeys, each forced to git-shell. It
// serves the repositories under root (an absolute path). The server stops
// when the test ends.
func StartSSHD(t testing.TB, root string, deployKeys ...Key) *SSHServer {
	t.Helper()
	sshd := SSHD(t)
	gitShell, err := exec.LookPath("git-shell")
	if err != nil {
		gitShell = filepath.Join(gitExecPath(t), "git-shell")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// sshd run by root insists on its privilege separation directory,
		// which a container's boot did not create.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("sshd: privilege separation directory: %v", err)
		}
	}

	dir := t.TempDir()
	s := &SSHServer{User: u.Username, Root: root, HostKey: NewKey(t, "testgit-host", ""), log: &SyncBuffer{}}
	hostKeyFile := filepath.Join(dir, "host_ed25519")
	authorized := filepath.Join(dir, "authorized_keys")
	var keys strings.Builder
	for _, k := range deployKeys {
		fmt.Fprintf(&keys, "restrict,command=\"%s -c \\\"$SSH_ORIGINAL_COMMAND\\\"\" %s\n", gitShell, k.AuthorizedKey)
	}
	if err := os.WriteFile(hostKeyFile, s.HostKey.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(authorized, []byte(keys.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	// The port is chosen by binding :0 and releasing it; another process
	// may take it in between, so a failed start is retried on a new port.
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
		cfg := filepath.Join(dir, "sshd_config")
		conf := strings.Join([]string{
			fmt.Sprintf("Port %d", port),
			"ListenAddress 127.0.0.1",
			"HostKey " + hostKeyFile,
			"AuthorizedKeysFile " + authorized,
			"PidFile none",
			"StrictModes no", // temp dirs are not what sshd expects of a home
			"UsePAM no",
			"PubkeyAuthentication yes",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"PermitRootLogin prohibit-password",
			"AllowUsers " + u.Username,
			"UseDNS no",
			"PrintMotd no",
			"LogLevel VERBOSE",
			"",
		}, "\n")
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		lastErr = s.start(t, sshd, cfg)
		if lastErr == nil {
			s.KnownHosts = []byte(knownhosts.Line([]string{s.Addr}, s.HostKey.Public) + "\n")
			return s
		}
	}
	t.Fatalf("sshd did not start: %v\n%s", lastErr, s.log.String())
	return nil
}

// start runs sshd -D (no daemon) -e (log to stderr) and waits until it
// accepts connections or exits.
func (s *SSHServer) start(t testing.TB, sshd, cfg string) error {
	cmd := exec.Command(sshd, "-D", "-e", "-f", cfg)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(10 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
			c.Close()
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(5 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
				if t.Failed() {
					t.Logf("sshd log:\n%s", s.log.String())
				}
			})
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("sshd exited: %v", err)
		case <-deadline:
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("sshd did not listen on %s within 10s", s.Addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// URL is the ssh:// URL of the repository at Root/name.
func (s *SSHServer) URL(name string) string {
	return fmt.Sprintf("ssh://%s@%s%s", s.User, s.Addr, filepath.ToSlash(filepath.Join(s.Root, name)))
}

// Log is what sshd logged so far.
func (s *SSHServer) Log() string { return s.log.String() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
