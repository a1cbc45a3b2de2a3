package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gitpeer/gitpeer/internal/controller/runner"
	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/internal/review/pullrequest"
)

// forgeTokenEnv names the environment variable holding the API token of
// --open-pull-request; it takes precedence over --git-credentials.
const forgeTokenEnv = "GITPEER_FORGE_TOKEN"

// openPRHelp is added to reconcile's help.
const openPRHelp = `

--open-pull-request (with --push-branch) opens the review branch's pull
request (GitLab: merge request) to --branch through the host's API, or
updates the one already open from that branch: never a second one. Its title
is the commit's subject, its body says what the pass changes. The host is
github.com or gitlab.com by --repo's host name, else --forge github|gitlab|
gitea; --forge-url is the host's https:// URL (default: --repo's, when that
is https://; GitHub Enterprise and self-managed GitLab take their web URL).
The API token is $` + forgeTokenEnv + `, else --git-credentials' bearerToken,
else (https:// repos) its password; ca.crt there is trusted for the API too.
A pull request the host refuses fails the pass after the branch is pushed.`

// prFlags are reconcile's pull request flags.
type prFlags struct {
	open            bool
	forge, forgeURL string
}

func (f *prFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.open, "open-pull-request", false, "with --push-branch: open or update the review branch's pull request through the host's API (token: $"+forgeTokenEnv+" or --git-credentials)")
	fs.StringVar(&f.forge, "forge", "", "the host's API for --open-pull-request: github, gitlab or gitea (default: from --repo's host, github.com or gitlab.com)")
	fs.StringVar(&f.forgeURL, "forge-url", "", "the host's https:// URL for --open-pull-request (default: --repo's, when https://; GitHub Enterprise: its web URL)")
}

// opener checks the flags and returns what opens the pull request after
// each pass, nil without --open-pull-request. Every mistake it can see
// before a pass (a missing --push-branch, an unknown forge, a --repo that
// names no owner/repo, no token) fails here, before anything is pushed.
func (f *prFlags) opener(review *reviewFlow, creds *gitauth.Source) (*prOpener, error) {
	if !f.open {
		if f.forge != "" || f.forgeURL != "" {
			return nil, errors.New("--forge and --forge-url need --open-pull-request")
		}
		return nil, nil
	}
	if review == nil {
		return nil, errors.New("--open-pull-request needs --push-branch: the pull request is opened from the review branch")
	}
	loc, err := pullrequest.Locate(review.repoURL)
	if err != nil {
		return nil, fmt.Errorf("--open-pull-request: --repo: %w", err)
	}
	kind, ok := pullrequest.Detect(loc.Host)
	if f.forge != "" {
		if kind, err = pullrequest.ParseKind(f.forge); err != nil {
			return nil, fmt.Errorf("--forge: %w", err)
		}
	} else if !ok {
		return nil, fmt.Errorf("--open-pull-request: cannot tell which API %s serves: give --forge github, gitlab or gitea", loc.Host)
	}
	api := f.forgeURL
	switch {
	case api != "":
		u, err := url.Parse(api)
		switch {
		case err != nil || u.Host == "":
			return nil, fmt.Errorf("--forge-url %q: not an absolute URL", api)
		case u.Scheme != "https":
			return nil, fmt.Errorf("--forge-url %s: must be https://: the API token is never sent over %s://", api, u.Scheme)
		case u.User != nil:
			return nil, fmt.Errorf("--forge-url %s: holds credentials: give the token in $%s or --git-credentials", gitauth.Redact(api), forgeTokenEnv)
		}
	case f.forge == "":
		// github.com or gitlab.com: the clients' public default.
	case loc.HTTPS:
		api = "https://" + loc.Host
	default:
		return nil, fmt.Errorf("--forge-url: needed for --forge %s with a %s --repo: give the host's https:// URL", kind, strings.SplitN(review.repoURL, "://", 2)[0])
	}
	owner, name, err := loc.Repo(kind, api)
	if err != nil {
		return nil, fmt.Errorf("--open-pull-request: --repo: %w", err)
	}
	o := &prOpener{cfg: pullrequest.Config{Kind: kind, API: api, Owner: owner, Name: name}, creds: creds, review: review}
	if _, err := o.host(); err != nil { // a missing token, an unusable ca.crt: say so before the first pass
		return nil, err
	}
	return o, nil
}

// prOpener opens or updates a review branch's pull request.
type prOpener struct {
	cfg    pullrequest.Config // without Token and CA, read at every pass
	creds  *gitauth.Source
	review *reviewFlow
	// tokenFrom says where the last token came from, for errors.
	tokenFrom string
	// last is the web URL of the pull request of the last pass, "" before.
	last string
}

// where names the host and repository for messages.
func (o *prOpener) where() string {
	api := o.cfg.API
	if api == "" {
		api = map[pullrequest.Kind]string{pullrequest.GitHub: "github.com", pullrequest.GitLab: "gitlab.com"}[o.cfg.Kind]
	}
	return fmt.Sprintf("%s %s/%s at %s", o.cfg.Kind, o.cfg.Owner, o.cfg.Name, api)
}

// host builds the Host with the token and CA read now: $GITPEER_FORGE_TOKEN,
// else the credentials directory's (re-read, so a rotated Secret applies).
func (o *prOpener) host() (pullrequest.Host, error) {
	token, file, ca, err := o.creds.APIToken()
	if err != nil {
		return nil, fmt.Errorf("--open-pull-request: --git-credentials: %w", err)
	}
	o.tokenFrom = file
	if env := os.Getenv(forgeTokenEnv); env != "" {
		token, o.tokenFrom = env, "$"+forgeTokenEnv
	}
	if token == "" {
		hint := fmt.Sprintf("set $%s, or give --git-credentials DIR with a %s file", forgeTokenEnv, gitauth.BearerTokenFile)
		if o.creds.Dir() != "" {
			hint = fmt.Sprintf("set $%s, or add %s (or, for an https:// --repo, %s) to --git-credentials %s",
				forgeTokenEnv, gitauth.BearerTokenFile, gitauth.PasswordFile, o.creds.Dir())
		}
		return nil, fmt.Errorf("--open-pull-request: no API token for %s: %s", o.where(), hint)
	}
	cfg := o.cfg
	cfg.Token, cfg.CA = token, ca
	h, err := pullrequest.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("--open-pull-request: %s: %w", o.where(), err)
	}
	return h, nil
}

// ensure opens or updates the pull request of the proposal res made, and
// says so on w. A pass that proposed nothing leaves the host alone: a
// withdrawn branch is deleted, and hosts close its pull request.
func (o *prOpener) ensure(ctx context.Context, cluster string, res *runner.Result, w io.Writer) error {
	if res == nil || res.Proposed == "" {
		return nil
	}
	h, err := o.host()
	if err != nil {
		return o.notOpened(err)
	}
	req := pullrequest.Proposal{Cluster: cluster, Head: res.PushBranch, Base: o.review.target, Commit: res.Proposed,
		Message: res.Message, Files: res.Files}.Request()
	pr, err := pullrequest.Ensure(ctx, h, req)
	if err != nil {
		return o.notOpened(fmt.Errorf("--open-pull-request: %w%s", err, o.hint(err)))
	}
	o.last = pr.URL
	if w != nil {
		fmt.Fprintf(w, "  pull request: %s (%s)\n", pr.URL, pr.Action)
		for _, other := range pr.Others {
			fmt.Fprintf(w, "  also open from %s to %s, left alone: %s\n", other.Head, other.Base, other.URL)
		}
	}
	return nil
}

// notOpened says that the branch is pushed all the same.
func (o *prOpener) notOpened(err error) error {
	return fmt.Errorf("branch %s is pushed, its pull request is not: %w", o.review.branch, err)
}

// hint tells what to check for an API error's status.
func (o *prOpener) hint(err error) string {
	var api *pullrequest.APIError
	if !errors.As(err, &api) {
		return ""
	}
	switch api.Status {
	case http.StatusUnauthorized:
		return fmt.Sprintf(" (the host refused the token from %s: check that it is valid and not expired)", o.tokenFrom)
	case http.StatusForbidden:
		return fmt.Sprintf(" (the token from %s may not do this: it needs write access to the pull requests of %s/%s)", o.tokenFrom, o.cfg.Owner, o.cfg.Name)
	case http.StatusNotFound:
		return fmt.Sprintf(" (no repository %s/%s that this token can see at %s: check --repo, --forge and --forge-url)", o.cfg.Owner, o.cfg.Name, o.where())
	case http.StatusUnprocessableEntity, http.StatusConflict:
		return " (the host refused the pull request for the reason it gives)"
	case 0:
		return fmt.Sprintf(" (no answer from %s: check --forge-url)", o.where())
	}
	return ""
}

// wrap runs pass, then ensure on what it proposed: the daemon's pass with
// --open-pull-request. An error opening the pull request fails the pass
// (the branch is pushed; the next pass tries again).
func (o *prOpener) wrap(cluster string, pass func(context.Context) (*runner.Result, error)) func(context.Context) (*runner.Result, error) {
	return func(ctx context.Context) (*runner.Result, error) {
		res, err := pass(ctx)
		if err != nil {
			return res, err
		}
		return res, o.ensure(ctx, cluster, res, nil)
	}
}
