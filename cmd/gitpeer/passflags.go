package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/reconcile"
)

// passFlags are the flags of what a pass computes from, registered once
// for reconcile and plan so that plan's pass is reconcile's: the cluster
// and its backend, the repo, what it renders and signs, and the spec's
// evaluation limits. How the repo is read (--branch, --git-credentials)
// is each command's: reconcile pushes to the branch it fetches, plan reads
// [DIR | URL] as status does (sourceFlags).
type passFlags struct {
	cluster, repoURL, signingFormat string
	clusterRoles                    bool
	lifetime                        time.Duration
	backend                         backendFlags
}

// register adds the flags to cmd.
func (f *passFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.cluster, "cluster", "", "this cluster's ID (must match the state dir)")
	fs.StringVar(&f.repoURL, "repo", "", "peering repo URL or path")
	f.backend.register(fs, false)
	fs.StringVar(&f.signingFormat, "signing-format", string(commitsig.FormatSSH), "sign commits with the cluster key as ssh (Flux) or openpgp (Argo CD, and publish clusters/<id>/openpgp.asc), git's gpg.format words")
	fs.BoolVar(&f.clusterRoles, "liqo-cluster-roles", false, "render Liqo's ClusterRoles (liqo-remote-controlplane, liqo-virtual-kubelet-remote-clusterwide) for a provider running no Liqo")
	fs.DurationVar(&f.lifetime, "certificate-lifetime", reconcile.DefaultCertificateLifetime, "validity of certificates this cluster signs as a provider")
	addSpecLimitFlags(cmd)
}

// format checks the flags that need no I/O and returns the signing format:
// a bad value is refused before anything is opened or fetched.
func (f *passFlags) format() (commitsig.Format, error) {
	if err := checkCertificateLifetime(f.lifetime); err != nil {
		return "", err
	}
	format, err := commitsig.ParseFormat(f.signingFormat)
	if err != nil {
		return "", fmt.Errorf("--signing-format: %w", err)
	}
	return format, nil
}
