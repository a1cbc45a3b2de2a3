package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// stageKey is rotate-key: it stages a next key in cluster's backend
// (backend.KeyRoller.StageKey), which the reconciler announces and then
// promotes (runner, "rollover"). With repo (a checkout or a bare
// repository, read at HEAD as readers read it, or a plain directory), the
// cluster.yaml published there must carry the backend's current key: a rotation staged in another
// cluster's backend (a wrong --context or --state-dir) would roll that
// cluster's key instead.
func stageKey(ctx context.Context, bf *backendFlags, cluster, repo, apiServer string, log io.Writer) error {
	if err := bf.check(); err != nil {
		return err
	}
	if apiServer != "" {
		if err := layout.CheckAPIServer(apiServer); err != nil {
			return fmt.Errorf("--api-server: %w", err)
		}
	}
	var published *layout.ClusterInfo
	if repo != "" {
		if strings.Contains(repo, "://") || scpLike(repo) {
			return fmt.Errorf("--repo %s is a URL: pass a clone or a bare repository of the peering repo (git clone %s peering)", repo, repo)
		}
		// Read as every reader reads a repo: a checkout or a bare
		// repository at HEAD from Git objects, a plain directory as it
		// stands.
		src, err := openLocal(repo, "", "--repo")
		if err != nil {
			return fmt.Errorf("--repo: %w", err)
		}
		defer src.Close()
		if published, err = layout.ReadClusterInfo(src.Tree, cluster); err != nil {
			init := "gitpeer init --state-dir DIR"
			if bf.kind == backendKubernetes {
				init = "gitpeer init --backend kubernetes"
			}
			return fmt.Errorf("--repo: %w; a key is rolled over once it is published: publish it first (%s --cluster %s --repo CLONE), or pass the checkout that has it", err, init, cluster)
		}
	}
	b, err := bf.open(ctx, cluster)
	if err != nil {
		return err
	}
	current, err := handshake.Fingerprint(b.Signer().Public())
	if err != nil {
		return err
	}
	if published != nil {
		if published.Fingerprint != current {
			return fmt.Errorf("%s publishes key %s, but this backend's key is %s: check that --context/--kubeconfig or --state-dir are %s's and that --repo is up to date (a rollover in progress publishes the new key once it switches)",
				layout.ClusterPath(cluster, layout.ClusterFile), published.Fingerprint, current, cluster)
		}
	}
	staged, err := b.Next(ctx)
	if err != nil {
		return err
	}
	next, err := b.StageKey(ctx, apiServer)
	if err != nil {
		return err
	}
	fp, err := handshake.Fingerprint(next.Signer.Public())
	if err != nil {
		return err
	}
	if staged != nil {
		fmt.Fprintf(log, "%s: key %s is staged already, to replace %s: nothing changed\n", cluster, fp, current)
	} else {
		fmt.Fprintf(log, "%s: staged key %s to replace %s\n", cluster, fp, current)
	}
	fmt.Fprintf(log, "The reconciler announces it to the cluster's Flux (clusters/%s/flux/), switches to it once Flux trusts it "+
		"(kubernetes backend) or --key-rollover-wait after announcing it (file backend), and publishes cluster.yaml with a rotation "+
		"statement signed by %s: there is nothing to commit. Each pass of gitpeer reconcile prints where the rollover stands (\"key rollover …\"), "+
		"as does the daemon's /status and status file (keyRollover).\n", cluster, current)
	return nil
}
