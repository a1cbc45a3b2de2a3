// Package gitauth authenticates gitpeer's fetches and pushes from a
// credentials directory: files named as the keys of Flux's Git Secret
// (GitRepository.spec.secretRef), so that in a Pod the directory is the
// mounted Secret and the same Secret serves Flux's GitRepository:
//
//	identity      SSH private key (a deploy key), OpenSSH or PEM format
//	password      its passphrase, when encrypted; over HTTPS, with username
//	known_hosts   SSH host keys; required: host keys are always checked
//	username      HTTPS basic auth user
//	bearerToken   HTTPS bearer token (takes precedence over username)
//	ca.crt        PEM CA bundle for HTTPS, added to the system's roots
//
// The keys are read with fluxcd/pkg/git's NewAuthOptions, so they mean here
// what they mean to Flux. The go-git auth methods are built here: Flux's
// builder is unexported in fluxcd/pkg/git/gogit, which also rewrites go-git's
// transport.UnsupportedCapabilities when imported.
//
// A Source re-reads the directory for every Open or Sync, so a rotated
// Secret takes effect at the next pass without touching the checkout. No
// secret is ever written anywhere: errors name files, never their content.
package gitauth

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	fluxgit "github.com/fluxcd/pkg/git"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
)

// File names in a credentials directory: the keys of Flux's Git Secret.
const (
	IdentityFile    = "identity"
	PasswordFile    = "password"
	KnownHostsFile  = "known_hosts"
	UsernameFile    = "username"
	BearerTokenFile = "bearerToken"
	CAFile          = "ca.crt"
)

// files are the keys read from a credentials directory; others (Flux's
// identity.pub, a mounted Secret's ..data) are ignored.
var files = []string{IdentityFile, PasswordFile, KnownHostsFile, UsernameFile, BearerTokenFile, CAFile}

// ErrURLCredentials is returned (wrapped) for a URL with a password, or with
// any userinfo over http(s): credentials belong in a credentials directory,
// not in a URL that is stored in .git/config and printed in messages.
var ErrURLCredentials = errors.New("URL holds credentials")

// CheckURL refuses a remote URL that carries credentials: a password in any
// scheme, or a user name over http(s). (ssh://git@host/... names the SSH
// login, which is not a secret.) The error shows the URL without its userinfo.
func CheckURL(rawURL string) error {
	_, err := checkEndpoint(rawURL)
	return err
}

// checkEndpoint is CheckURL that also returns the parsed endpoint.
func checkEndpoint(rawURL string) (*transport.Endpoint, error) {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, fmt.Errorf("URL %s: %w", Redact(rawURL), redactErr(err, rawURL))
	}
	web := ep.Protocol == "http" || ep.Protocol == "https"
	if ep.Password != "" || strings.Contains(ep.User, ":") || web && ep.User != "" {
		return nil, fmt.Errorf("%w: %s: remove them from the URL and put them in a credentials directory "+
			"(--git-credentials DIR, with files %s and %s, or %s)",
			ErrURLCredentials, Redact(rawURL), UsernameFile, PasswordFile, BearerTokenFile)
	}
	return ep, nil
}

// Redact returns rawURL with everything before its last "@" (after the
// scheme, if any) replaced by "***", for messages: the userinfo, however
// malformed the URL. A URL without "@" is returned as it is.
func Redact(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		scheme, rest = "", rawURL
	} else {
		scheme += "://"
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return rawURL
	}
	return scheme + "***@" + rest[at+1:]
}

// Source gives the credentials of one remote, read from a directory.
// Its methods are safe for concurrent use.
type Source struct {
	dir      string // absolute; "" when none was given
	url      string
	ep       *transport.Endpoint
	hostPort string // ep's host:port, the port defaulted

	mu      sync.Mutex
	secrets [][]byte // of the last Transport, for Explain to redact
}

// New returns the Source of the remote rawURL with credentials from dir.
// An empty dir means none: anonymous HTTPS, and for SSH go-git's default
// (the ssh agent and SSH_KNOWN_HOSTS or ~/.ssh/known_hosts). New refuses a
// URL with credentials in it (CheckURL) and a dir that is not a directory;
// the files are read by Transport.
func New(dir, rawURL string) (*Source, error) {
	ep, err := checkEndpoint(rawURL)
	if err != nil {
		return nil, err
	}
	s := &Source{url: rawURL, ep: ep}
	port := ep.Port
	if port == 0 {
		port = defaultPorts[ep.Protocol]
	}
	s.hostPort = net.JoinHostPort(ep.Host, strconv.Itoa(port))
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("credentials directory %s: %w", dir, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("credentials directory: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("credentials directory %s is not a directory", abs)
		}
		s.dir = abs
	}
	return s, nil
}

// Dir is the absolute credentials directory, "" when none was given.
func (s *Source) Dir() string { return s.dir }

// Host is the remote's host, with its port unless that is the scheme's
// default.
func (s *Source) Host() string {
	if s.ep.Port == 0 || defaultPorts[s.ep.Protocol] == s.ep.Port {
		return s.ep.Host
	}
	return net.JoinHostPort(s.ep.Host, strconv.Itoa(s.ep.Port))
}

var defaultPorts = map[string]int{"ssh": 22, "https": 443, "http": 80}

// Transport reads the directory and returns the go-git auth method and the
// PEM CA bundle for the next fetches and pushes. Without a directory, or
// for a local remote, both are nil. It fails when the files do not make
// usable credentials for the URL's scheme: for SSH, a missing identity or
// known_hosts (host keys are always checked), a key that does not parse or
// whose passphrase is wrong; for HTTPS, a password without a username, a
// ca.crt without a certificate; over plain http://, any credentials.
func (s *Source) Transport() (transport.AuthMethod, []byte, error) {
	if s.dir == "" || s.ep.Protocol == "file" {
		return nil, nil, nil
	}
	data, err := s.read()
	if err != nil {
		return nil, nil, err
	}
	s.remember(data)
	u := url.URL{Scheme: s.ep.Protocol, Host: s.Host()}
	if s.ep.User != "" {
		u.User = url.User(s.ep.User)
	}
	if s.ep.Protocol == "ssh" {
		return s.sshAuth(u, data)
	}
	return s.httpAuth(u, data)
}

func (s *Source) sshAuth(u url.URL, data map[string][]byte) (transport.AuthMethod, []byte, error) {
	if len(data[IdentityFile]) == 0 {
		return nil, nil, fmt.Errorf("no %s: add the private key of a deploy key with write access to %s as %s",
			s.file(IdentityFile), s.Host(), s.file(IdentityFile))
	}
	if len(data[KnownHostsFile]) == 0 {
		return nil, nil, fmt.Errorf("no %s: refusing to connect to %s without checking its host key; add its line "+
			"(ssh-keyscan%s %s >> %s, then compare the fingerprint with the one the host publishes)",
			s.file(KnownHostsFile), s.Host(), s.keyscanPort(), s.ep.Host, s.file(KnownHostsFile))
	}
	opts, err := fluxgit.NewAuthOptions(u, data)
	if err != nil {
		return nil, nil, fmt.Errorf("credentials in %s: %w", s.dir, err)
	}
	pk, err := gitssh.NewPublicKeys(opts.Username, opts.Identity, opts.Password)
	if err != nil {
		var missing *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &missing) || errors.Is(err, x509.IncorrectPasswordError) ||
			strings.Contains(err.Error(), "decryption password incorrect"):
			return nil, nil, fmt.Errorf("%s is encrypted and %s is not its passphrase", s.file(IdentityFile), s.file(PasswordFile))
		}
		return nil, nil, fmt.Errorf("%s: not a usable SSH private key: %w", s.file(IdentityFile), err)
	}
	db, err := knownhosts.NewDB(s.file(KnownHostsFile))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", s.file(KnownHostsFile), err)
	}
	algos := db.HostKeyAlgorithms(s.hostPort)
	if len(algos) == 0 {
		return nil, nil, fmt.Errorf("%s has no key for %s: add its line (ssh-keyscan%s %s >> %s, "+
			"then compare the fingerprint with the one the host publishes)",
			s.file(KnownHostsFile), s.Host(), s.keyscanPort(), s.ep.Host, s.file(KnownHostsFile))
	}
	check := db.HostKeyCallback()
	pk.HostKeyCallback = func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := check(hostname, remote, key)
		if err == nil {
			return nil
		}
		return &hostKeyError{host: s.Host(), known: s.file(KnownHostsFile), dir: s.dir, key: key,
			unknown: knownhosts.IsHostUnknown(err), err: err}
	}
	// Offer only the algorithms of the known keys: otherwise the server
	// may pick another of its keys, which known_hosts cannot vouch for.
	pk.HostKeyAlgorithms = algos
	return pk, nil, nil
}

func (s *Source) httpAuth(u url.URL, data map[string][]byte) (transport.AuthMethod, []byte, error) {
	opts, err := fluxgit.NewAuthOptions(u, data)
	if err != nil {
		return nil, nil, fmt.Errorf("credentials in %s: %w", s.dir, err)
	}
	var auth transport.AuthMethod
	switch {
	case opts.BearerToken != "":
		auth = &githttp.TokenAuth{Token: opts.BearerToken}
	case opts.Username != "" || opts.Password != "":
		auth = &githttp.BasicAuth{Username: opts.Username, Password: opts.Password}
	}
	if auth != nil && s.ep.Protocol == "http" {
		return nil, nil, fmt.Errorf("refusing to send the credentials of %s over plain http:// to %s: use https://",
			s.dir, s.Host())
	}
	if len(opts.CAFile) > 0 && !x509.NewCertPool().AppendCertsFromPEM(opts.CAFile) {
		return nil, nil, fmt.Errorf("%s holds no PEM certificate", s.file(CAFile))
	}
	return auth, opts.CAFile, nil
}

// read returns the known files of the directory that exist and are not
// empty. Files are read through symlinks, as a mounted Secret's are.
func (s *Source) read() (map[string][]byte, error) {
	data := map[string][]byte{}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(s.dir, name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("credentials: %w", err)
		}
		if name == UsernameFile || name == PasswordFile || name == BearerTokenFile {
			// A file written by hand ends with a newline; a Secret's does not.
			b = bytes.TrimRight(b, "\r\n")
		}
		if len(b) > 0 {
			data[name] = b
		}
	}
	return data, nil
}

// UnknownFiles lists the regular files of the credentials directory that
// are none of the keys it reads (the keys of Flux's Git Secret, see
// Files): a misnamed key (id_ed25519, known-hosts, token) would otherwise
// be ignored without a word. Flux's identity.pub and the ..data entries of
// a mounted Secret are not listed. Nil without a directory, or when it
// cannot be read (Transport says why).
func (s *Source) UnknownFiles() []string {
	if s.dir == "" {
		return nil
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil
	}
	known := map[string]bool{"identity.pub": true}
	for _, name := range files {
		known[name] = true
	}
	var unknown []string
	for _, e := range entries {
		if known[e.Name()] || strings.HasPrefix(e.Name(), "..") || e.IsDir() {
			continue
		}
		unknown = append(unknown, e.Name())
	}
	return unknown
}

// Files are the names the credentials directory is read for, the keys of
// Flux's Git Secret, in the order documentation lists them.
func Files() []string { return slices.Clone(files) }

// remember keeps the secret values of the last read for Explain to redact.
func (s *Source) remember(data map[string][]byte) {
	var secrets [][]byte
	for _, name := range []string{IdentityFile, PasswordFile, BearerTokenFile} {
		if b := data[name]; len(b) >= 4 {
			secrets = append(secrets, b)
		}
	}
	s.mu.Lock()
	s.secrets = secrets
	s.mu.Unlock()
}

func (s *Source) file(name string) string { return filepath.Join(s.dir, name) }

func (s *Source) keyscanPort() string {
	if s.ep.Port != 0 && s.ep.Port != 22 {
		return " -p " + strconv.Itoa(s.ep.Port)
	}
	return ""
}

// APIToken reads the token for the API of the repo's host (opening pull
// requests) from the directory: bearerToken, else, for an https:// repo,
// password (an access token serves as the Git password and as the API
// token on GitHub, GitLab and Gitea). Over ssh:// password is the
// identity's passphrase, never a token. file is the path the token came
// from, "" when the directory holds none (or none was given); ca is its
// ca.crt, for an API behind the same private CA as the Git host.
func (s *Source) APIToken() (token, file string, ca []byte, err error) {
	if s.dir == "" {
		return "", "", nil, nil
	}
	data, err := s.read()
	if err != nil {
		return "", "", nil, err
	}
	ca = data[CAFile]
	switch {
	case len(data[BearerTokenFile]) > 0:
		return string(data[BearerTokenFile]), s.file(BearerTokenFile), ca, nil
	case len(data[PasswordFile]) > 0 && s.ep.Protocol == "https":
		return string(data[PasswordFile]), s.file(PasswordFile), ca, nil
	}
	return "", "", ca, nil
}
