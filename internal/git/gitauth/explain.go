package gitauth

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/crypto/ssh"
)

// Causes of a failed fetch or push that Explain recognises; match them with
// errors.Is.
var (
	// ErrHostKeyMismatch: the SSH host presented a key that known_hosts
	// does not hold for it (or holds another one).
	ErrHostKeyMismatch = errors.New("host key mismatch")
	// ErrAuthRefused: the host refused the credentials (HTTP 401 or 403,
	// SSH public key refused).
	ErrAuthRefused = errors.New("authentication refused")
	// ErrRepoNotFound: the host has no such repository, or does not show it
	// to these credentials.
	ErrRepoNotFound = errors.New("repository not found")
	// ErrPushDeclined: the host's hooks declined the push (a protected
	// branch, a policy).
	ErrPushDeclined = errors.New("push declined by the host")
	// ErrNoCredentials: an ssh:// remote with no --git-credentials, where
	// go-git's fallback (the ssh agent, ~/.ssh/known_hosts) is missing.
	ErrNoCredentials = errors.New("no credentials")
	// ErrUntrustedCertificate: the HTTPS host's certificate is not signed by
	// a trusted CA or does not name the host.
	ErrUntrustedCertificate = errors.New("untrusted certificate")
)

// Error is a failed fetch or push with its cause named and what to do.
type Error struct {
	// Cause is one of the Err* sentinels of this package.
	Cause error
	// Msg is the whole message: cause, host and what to do.
	Msg string
	// Err is the error go-git returned (redacted).
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns both the cause and the underlying error, so errors.Is
// matches the sentinels of this package and go-git's alike.
func (e *Error) Unwrap() []error { return []error{e.Cause, e.Err} }

// Explain returns err, from a fetch or push of this Source's remote, as an
// *Error naming its cause and what to do when it is a host key mismatch, an
// unknown host, refused credentials, a missing repository, a push declined
// by the host's hooks (with the host's own "remote:" lines, which gitsync
// appends to push errors) or an untrusted certificate. Other errors are
// returned as they are. Either way no secret of the directory is left in
// the message.
func (s *Source) Explain(err error) error {
	if err == nil {
		return nil
	}
	err = s.redact(err)
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	msg := err.Error()
	host := s.Host()
	creds := func(what string) string {
		if s.dir == "" {
			return "no credentials were given: pass --git-credentials DIR holding " + what
		}
		return "check " + what + " in " + s.dir
	}
	wrap := func(cause error, format string, args ...any) error {
		return &Error{Cause: cause, Msg: fmt.Sprintf(format, args...), Err: err}
	}

	var hk *hostKeyError
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	switch {
	case s.dir == "" && s.ep.Protocol == "ssh" && (strings.Contains(msg, "SSH_AUTH_SOCK") || strings.Contains(msg, "SSH agent")):
		return wrap(ErrNoCredentials, "%s is an SSH URL and no --git-credentials were given (nor is an ssh agent running): "+
			"pass --git-credentials DIR, DIR holding the keys of Flux's Git Secret: the private key of a deploy key with write access as DIR/%s "+
			"and %s's host key as DIR/%s (ssh-keyscan%s %s > DIR/%s, then compare the fingerprint with the one the host publishes)",
			s.url, IdentityFile, host, KnownHostsFile, s.keyscanPort(), s.ep.Host, KnownHostsFile)
	case s.dir == "" && s.ep.Protocol == "ssh" && strings.Contains(msg, "known_hosts"):
		return wrap(ErrNoCredentials, "%s is an SSH URL and no --git-credentials were given, and there is no known_hosts to check %s's host key with: "+
			"pass --git-credentials DIR with the deploy key as DIR/%s and the host's key as DIR/%s (ssh-keyscan%s %s > DIR/%s, "+
			"then compare the fingerprint with the one the host publishes)",
			s.url, host, IdentityFile, KnownHostsFile, s.keyscanPort(), s.ep.Host, KnownHostsFile)
	case errors.As(err, &hk):
		return &Error{Cause: ErrHostKeyMismatch, Msg: hk.Error(), Err: err}

	case errors.Is(err, transport.ErrAuthenticationRequired):
		return wrap(ErrAuthRefused, "authentication refused by %s: %s (the host answered 401 Unauthorized)", host,
			creds(UsernameFile+"/"+PasswordFile+" or "+BearerTokenFile))
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return wrap(ErrAuthRefused, "authentication refused by %s: %s (the host answered 403 Forbidden: "+
			"these credentials may lack write access to the repository)", host, creds(UsernameFile+"/"+PasswordFile+" or "+BearerTokenFile))
	case strings.Contains(msg, "ssh: unable to authenticate"):
		if s.dir == "" {
			return wrap(ErrAuthRefused, "authentication refused by %s: no credentials were given: pass --git-credentials DIR "+
				"with the deploy key as DIR/%s and the host's key in DIR/%s", host, IdentityFile, KnownHostsFile)
		}
		return wrap(ErrAuthRefused, "authentication refused by %s: check that %s is the private key of a deploy key "+
			"of the repository with write access, and the login user in the URL", host, s.file(IdentityFile))

	case errors.Is(err, transport.ErrRepositoryNotFound) && s.ep.Protocol == "file":
		return wrap(ErrRepoNotFound, "no Git repository at %s (a local path): check --repo; it takes the peering repo's URL, or the path of a bare repository on this machine",
			s.ep.Path)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		where := "the credentials in " + s.dir
		if s.dir == "" {
			where = "that it needs none (--git-credentials DIR)"
		}
		return wrap(ErrRepoNotFound, "repository %s not found on %s (or not visible to these credentials): check --repo, and %s",
			s.ep.Path, host, where)

	case isDeclined(msg):
		return wrap(ErrPushDeclined, "push to %s declined by the host (is the branch protected? "+
			"allow this deploy key or user to push to it): %s", host, msg)

	case errors.As(err, &unknownCA):
		return wrap(ErrUntrustedCertificate, "certificate of %s is not signed by a trusted CA: put the CA's PEM certificate in %s",
			host, s.fileOr(CAFile))
	case errors.As(err, &badHost):
		return wrap(ErrUntrustedCertificate, "certificate of %s is not valid for that name: %v", host, badHost)
	}
	return err
}

// isDeclined reports whether a push error is a refusal by the host's hooks
// (pre-receive, update, GitHub's and GitLab's protected branches).
func isDeclined(msg string) bool {
	for _, s := range []string{"hook declined", "protected branch", "Protected branch", "GH006", "not allowed to push"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func (s *Source) fileOr(name string) string {
	if s.dir == "" {
		return "DIR/" + name + " and pass --git-credentials DIR"
	}
	return s.file(name)
}

// hostKeyError is a host key that known_hosts does not vouch for.
type hostKeyError struct {
	host, known, dir string
	key              ssh.PublicKey
	unknown          bool // no key at all for the host
	err              error
}

func (e *hostKeyError) Error() string {
	fp := ssh.FingerprintSHA256(e.key)
	if e.unknown {
		return fmt.Sprintf("host key of %s is not in %s (the host offers %s %s): add the host's line to it, "+
			"after checking that fingerprint with the one the host publishes", e.host, e.known, e.key.Type(), fp)
	}
	return fmt.Sprintf("host key of %s does not match known_hosts in %s (the host offers %s %s): "+
		"someone may be intercepting the connection; if the host's key really changed, replace its line in %s",
		e.host, e.dir, e.key.Type(), fp, e.known)
}

func (e *hostKeyError) Unwrap() error { return e.err }

// redact returns err with every secret of the last Transport replaced by
// "***" in its message. Go-git does not put credentials in its errors;
// this is for what a host echoes back.
func (s *Source) redact(err error) error {
	s.mu.Lock()
	secrets := s.secrets
	s.mu.Unlock()
	msg := err.Error()
	out := msg
	for _, sec := range secrets {
		out = strings.ReplaceAll(out, string(sec), "***")
		// A multi-line key cannot be echoed whole; its lines can.
		for _, line := range bytes.Split(sec, []byte("\n")) {
			if len(bytes.TrimSpace(line)) >= 16 {
				out = strings.ReplaceAll(out, string(bytes.TrimSpace(line)), "***")
			}
		}
	}
	out = strings.ReplaceAll(out, s.url, Redact(s.url))
	if out == msg {
		return err
	}
	return &redacted{msg: out, err: err}
}

// redactErr returns err with rawURL replaced by its redacted form.
func redactErr(err error, rawURL string) error {
	msg := err.Error()
	if r := Redact(rawURL); r != rawURL && strings.Contains(msg, rawURL) {
		return &redacted{msg: strings.ReplaceAll(msg, rawURL, r), err: err}
	}
	return err
}

// redacted is an error whose message hides secrets; errors.Is and As still
// see the original.
type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
