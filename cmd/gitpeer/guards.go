package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/git/gitauth"
)

// warnUnknownCredentials writes a warning on w naming the files of the
// credentials directory that gitpeer does not read, and the names it
// reads: a key stored under another name (id_ed25519, known-hosts, token)
// is otherwise ignored, and the failure that follows names only the file
// found missing.
func warnUnknownCredentials(w io.Writer, creds *gitauth.Source) {
	unknown := creds.UnknownFiles()
	if len(unknown) == 0 {
		return
	}
	fmt.Fprintf(w, "warning: --git-credentials %s: ignoring %s: gitpeer reads only the keys of Flux's Git Secret: %s (identity.pub is ignored); rename the file if it is one of those\n",
		creds.Dir(), strings.Join(unknown, ", "), strings.Join(gitauth.Files(), ", "))
}

// checkRemote refuses a reconcile --repo that is a checkout (a directory
// with a working tree): the reconciler clones --repo and pushes to it, and
// Git refuses a push to the branch a checkout has checked out, after the
// pass did its work. The error names the checkout's origin, which is what
// --repo wants.
func checkRemote(repo string) error {
	if repo == "" || strings.Contains(repo, "://") || !isCheckout(repo) {
		return nil
	}
	hint := "pass the URL it was cloned from, or the path of a bare repository (git clone --bare " + repo + " peering.git)"
	if origin := originURL(repo); origin != "" {
		hint = "pass the URL it was cloned from: --repo " + origin
	}
	return fmt.Errorf("--repo %s is a checkout (a working tree): reconcile clones --repo into its own checkout and pushes to it, "+
		"and Git refuses pushes to a checked-out branch; %s", repo, hint)
}

// checkNotURL refuses, for verb (validate, verify), a DIR that is a URL:
// they read a local clone, with its history.
func checkNotURL(verb, dir string) error {
	if !strings.Contains(dir, "://") && !scpLike(dir) {
		return nil
	}
	return fmt.Errorf("%s reads a local clone, not a URL (it checks the commits of its history, as CI does on a checkout): "+
		"git clone %s peering && gitpeer %s peering", verb, dir, verb)
}

// inferCluster is the cluster whose state the backend flags point at: the
// state dir's cluster ID (file), or Liqo's cluster ID (kubernetes), for a
// command whose --cluster only checks what the backend already knows.
func (f *backendFlags) inferCluster(ctx context.Context) (string, error) {
	if err := f.check(); err != nil {
		return "", err
	}
	if f.kind == backendKubernetes {
		b, err := f.open(ctx, "")
		if err != nil {
			return "", err
		}
		return b.ClusterID(), nil
	}
	b, err := file.Open(f.stateDir)
	if err != nil {
		return "", err
	}
	return b.ClusterID(), nil
}
