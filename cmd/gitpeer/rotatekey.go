package main

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gitpeer/gitpeer/backend"
	"github.com/gitpeer/gitpeer/backend/kubernetes"
	"github.com/gitpeer/gitpeer/handshake"
	"github.com/gitpeer/gitpeer/layout"
)

// kubeKeys is what rotate-key needs of the kubernetes backend
// (kubernetes.Backend): its keys, and the key its last rotation replaced.
type kubeKeys interface {
	backend.Backend
	RotateKey(ctx context.Context, apiServer string) (crypto.Signer, error)
	PreviousKey(ctx context.Context) (crypto.Signer, error)
}

// rotateKubernetes is rotate-key on the kubernetes backend. The backend
// keeps no API server and takes its CA bundle from the admin's kubeconfig,
// so both default to what clusters/<id>/cluster.yaml in repo publishes now
// (--api-server and --ca-file change them, and the statement signs the
// change).
func rotateKubernetes(ctx context.Context, bf *backendFlags, cluster, repo, apiServer string, log io.Writer) error {
	if err := bf.check(); err != nil {
		return err
	}
	published, err := layout.ReadClusterInfo(layout.NewTree(repo), cluster)
	if err != nil {
		return fmt.Errorf("%w; rotate-key replaces the key published there: publish it first (gitpeer init --backend kubernetes --cluster %s --repo CLONE), or pass the clone that has it as --repo", err, cluster)
	}
	opts, err := bf.kubernetesOptions(cluster)
	if err != nil {
		return err
	}
	opts.APIServer = published.APIServer
	if apiServer != "" {
		if err := layout.CheckAPIServer(apiServer); err != nil {
			return fmt.Errorf("--api-server: %w", err)
		}
		opts.APIServer = apiServer
	}
	if bf.caFile == "" {
		opts.CABundle = []byte(published.CA)
	}
	b, err := kubernetes.New(ctx, opts)
	if err != nil {
		return err
	}
	old, err := rotateOrResign(ctx, b, published, log)
	if err != nil {
		return err
	}
	if err := publishRotation(repo, cluster, b, old, log); err != nil {
		return err
	}
	fmt.Fprintf(log, "Liqo's controllers read the new key from Secret %s/%s at their next reconcile, with no restart; restart the gitpeer reconciler (kubectl -n gitpeer-system rollout restart deploy/gitpeer), which keeps the key it loaded, once this commit is merged (docs/deploy.md, Rotating the cluster key)\n",
		b.LiqoNamespace(), kubernetes.KeysSecretName)
	return nil
}

// rotateOrResign replaces b's key when it is the one published (the
// rotation's first run), and returns the key it replaced, which signs the
// statement; b publishes the API server and CA it was opened with. When
// the key published is the one the last rotation replaced
// (the rotation ran but its cluster.yaml never reached the repo: lost,
// reverted, or the run stopped before writing it), it rotates nothing and
// returns that previous key, so the statement is signed again. Any other
// published key is not this cluster's: an error naming both fingerprints.
func rotateOrResign(ctx context.Context, b kubeKeys, published *layout.ClusterInfo, log io.Writer) (crypto.Signer, error) {
	current, err := handshake.Fingerprint(b.Signer().Public())
	if err != nil {
		return nil, err
	}
	file := layout.ClusterPath(published.ClusterID, layout.ClusterFile)
	if published.Fingerprint == current {
		old, err := b.RotateKey(ctx, "")
		if err != nil {
			return nil, err
		}
		info, err := b.ClusterInfo()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "rotated %s: %s -> %s\n", published.ClusterID, current, info.Fingerprint)
		return old, nil
	}
	prev, err := b.PreviousKey(ctx)
	if err != nil && !errors.Is(err, kubernetes.ErrNoPreviousKey) {
		return nil, err
	}
	if prev != nil {
		fp, err := handshake.Fingerprint(prev.Public())
		if err != nil {
			return nil, err
		}
		if fp == published.Fingerprint {
			fmt.Fprintf(log, "%s publishes %s, the key the last rotation replaced: signing the statement for %s again, rotating nothing\n", file, fp, current)
			return prev, nil
		}
	}
	return nil, fmt.Errorf("%s publishes key %s, but this cluster's key is %s and it replaced no key of that fingerprint: check that --context/--kubeconfig are %s's and that --repo is up to date",
		file, published.Fingerprint, current, published.ClusterID)
}

// publishRotation writes into the working tree repo the cluster.yaml of b
// (its new key) with the rotation statement old signs, and the manifest b's
// new key signs: what a rotation publishes, on either backend.
func publishRotation(repo, cluster string, b backend.Backend, old crypto.Signer, log io.Writer) error {
	info, err := b.ClusterInfo()
	if err != nil {
		return err
	}
	if err := layout.SignRotation(info, old); err != nil {
		return err
	}
	data, err := info.Encode()
	if err != nil {
		return err
	}
	return publish(repo, b.Signer(), cluster, map[string][]byte{layout.ClusterPath(cluster, layout.ClusterFile): data}, time.Now(), log)
}
