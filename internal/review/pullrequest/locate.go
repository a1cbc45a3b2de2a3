package pullrequest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config says which host's API New talks to, about which repository.
type Config struct {
	Kind Kind
	// API is the host's base URL, https:// (plain http:// would send the
	// token in clear and is refused). "" is the public host: api.github.com
	// or gitlab.com; Gitea has none. For GitHub Enterprise Server and
	// self-managed GitLab the web URL will do: the clients add /api/v3/ and
	// /api/v4/ when missing. For Gitea, the root URL Gitea is served at.
	API string
	// Owner and Name name the repository: owner/name on GitHub and Gitea;
	// on GitLab Owner is the namespace, nested groups included (a/b), and
	// the project is Owner/Name.
	Owner, Name string
	// Token is the API token: a personal, project or bot access token with
	// write access to the repository's pull requests.
	Token string
	// CA is a PEM bundle of roots to trust besides the system's, for a
	// self-hosted host with a private CA.
	CA []byte
	// HTTPClient, when set, replaces the client New builds (and ignores
	// CA): tests use it.
	HTTPClient *http.Client
}

// requestTimeout bounds each API request: a host that hangs fails the call
// rather than the pass.
const requestTimeout = 30 * time.Second

// New returns cfg's Host. It fails without a token, owner or name, on an
// unknown Kind, a Gitea without API URL, an API URL that is not https://, or
// a CA bundle without a certificate. It does not contact the host.
func New(cfg Config) (Host, error) {
	switch {
	case cfg.Token == "":
		return nil, errors.New("no API token")
	case cfg.Owner == "" || cfg.Name == "":
		return nil, errors.New("no repository owner/name")
	}
	if cfg.API != "" {
		u, err := url.Parse(cfg.API)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("API URL %q: not an absolute URL", cfg.API)
		}
		if u.Scheme != "https" {
			return nil, fmt.Errorf("API URL %s: refusing to send the API token over %s://: use https://", cfg.API, u.Scheme)
		}
		if u.User != nil {
			return nil, fmt.Errorf("API URL %s: holds credentials: give the token separately", redactURL(u))
		}
	}
	hc := cfg.HTTPClient
	if hc == nil {
		var err error
		if hc, err = httpClient(cfg.CA); err != nil {
			return nil, err
		}
	}
	switch cfg.Kind {
	case GitHub:
		return newGitHub(cfg, hc)
	case GitLab:
		return newGitLab(cfg, hc)
	case Gitea:
		if cfg.API == "" {
			return nil, errors.New("gitea: no API URL: Gitea has no public default")
		}
		return newGitea(cfg, hc), nil
	}
	_, err := ParseKind(string(cfg.Kind))
	return nil, err
}

// httpClient trusts the system's roots plus ca, with requestTimeout.
func httpClient(ca []byte) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if len(ca) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("CA bundle holds no PEM certificate")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: requestTimeout}, nil
}

func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// Location is where a repo URL says a repository lives on the web.
type Location struct {
	Host  string // host name, with the port for an https URL on a non-default port
	Path  string // owner/name, nested groups included, without .git
	HTTPS bool   // the repo URL is https://, so https://Host serves the web UI
}

// Locate reads the web location of a repository from its Git URL: https://,
// ssh:// or scp-like (git@host:owner/repo). A local path, a file:// or
// plain http:// URL, or a URL whose path names no owner/repo fails.
func Locate(repoURL string) (Location, error) {
	var loc Location
	if !strings.Contains(repoURL, "://") {
		// scp-like: [user@]host:path, with no slash before the colon.
		colon := strings.Index(repoURL, ":")
		if colon < 0 || strings.Contains(repoURL[:colon], "/") {
			return loc, fmt.Errorf("%s is a local path, not a repository on a Git host", repoURL)
		}
		loc.Host, loc.Path = repoURL[strings.LastIndex(repoURL[:colon], "@")+1:colon], repoURL[colon+1:]
	} else {
		u, err := url.Parse(repoURL)
		if err != nil {
			return loc, fmt.Errorf("%s: %w", repoURL, err)
		}
		switch u.Scheme {
		case "https":
			loc.Host, loc.HTTPS = u.Host, true
		case "ssh":
			loc.Host = u.Hostname() // the web UI is not on the ssh port
		default:
			return loc, fmt.Errorf("%s: a %s:// URL is not a repository on a Git host's web API (https:// or ssh://)", repoURL, u.Scheme)
		}
		loc.Path = u.Path
	}
	loc.Path = strings.TrimSuffix(strings.Trim(loc.Path, "/"), ".git")
	if loc.Host == "" || !strings.Contains(loc.Path, "/") {
		return loc, fmt.Errorf("%s names no owner/repo", repoURL)
	}
	return loc, nil
}

// Detect tells the host kind from a repo's host name: github.com and
// gitlab.com only. Other names (a GitHub Enterprise, a self-managed GitLab,
// any Gitea) say nothing reliable: ok is false.
func Detect(host string) (Kind, bool) {
	switch strings.ToLower(strings.TrimSuffix(host, ":443")) {
	case "github.com", "www.github.com":
		return GitHub, true
	case "gitlab.com", "www.gitlab.com":
		return GitLab, true
	}
	return "", false
}

// Repo splits loc.Path into owner and name for kind: the API URL's own
// path (a host served under a prefix, https://example.org/git) is dropped
// from its front; GitHub and Gitea then want exactly owner/name, GitLab
// namespace/.../name.
func (loc Location) Repo(kind Kind, api string) (owner, name string, err error) {
	p := loc.Path
	if u, err := url.Parse(api); err == nil && api != "" {
		if prefix := strings.Trim(u.Path, "/"); prefix != "" {
			// GitHub Enterprise's and GitLab's API paths are not web prefixes.
			prefix = strings.TrimSuffix(strings.TrimSuffix(prefix, "api/v3"), "api/v4")
			prefix = strings.Trim(prefix, "/")
			if prefix != "" {
				p = strings.TrimPrefix(p, prefix+"/")
			}
		}
	}
	i := strings.LastIndex(p, "/")
	owner, name = p[:i], p[i+1:]
	if owner == "" || name == "" || kind != GitLab && strings.Contains(owner, "/") {
		return "", "", fmt.Errorf("%s names no owner/repo on %s (a path of %d segments)", loc.Path, kind, strings.Count(p, "/")+1)
	}
	return owner, name, nil
}
