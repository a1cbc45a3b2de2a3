package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/trust/fluxtrust"
)

// The Flux objects FluxTrusts reads: GitRepository gitpeer-<cluster ID> of
// manifests/flux and the Secret its spec.verify names, which the overlay
// generates once and the cluster's tree (clusters/<id>/flux/) keeps from
// then on.
const (
	// FluxNamespace is Flux's namespace, where manifests/flux puts both.
	FluxNamespace = fluxtrust.Namespace
	// FluxGitRepositoryPrefix prefixes the cluster ID in the
	// GitRepository's name.
	FluxGitRepositoryPrefix = "gitpeer-"
	// FluxVerifySecretName is the verify Secret gitpeer keeps: the one the
	// tree renders and a key rollover adds the next key to.
	FluxVerifySecretName = fluxtrust.SecretName
)

// GitRepositoryResource is Flux's GitRepository (source-controller >=
// v1.0: source.toolkit.fluxcd.io/v1).
var GitRepositoryResource = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}

var _ backend.FluxTruster = (*Backend)(nil)

// FluxTrusts implements backend.FluxTruster from GitRepository
// flux-system/gitpeer-<cluster ID> and the Secret its
// spec.verify.secretRef names, read through Options.Dynamic (else a client
// of Options.Config) and the core client:
//   - no such GitRepository, or Flux's CRD not installed: ok, the cluster
//     applies its tree with another engine;
//   - no spec.verify: ok, Flux checks no signature at all;
//   - a verify Secret other than FluxVerifySecretName (an overlay that
//     generates it with a name hash, or the Secret gitpeer init prints):
//     not ok, gitpeer cannot put the next key in it;
//   - else ok once a value under a key ending in .sshpub or .asc (the keys
//     source-controller reads) equals want, both without surrounding white
//     space.
//
// Errors are the API server's, Forbidden ones naming the permission the
// Role gitpeer-flux of manifests/rbac grants. want empty is an error.
func (b *Backend) FluxTrusts(ctx context.Context, want []byte) (bool, string, error) {
	want = bytes.TrimSpace(want)
	if len(want) == 0 {
		return false, "", errors.New("flux trust: no key to look for")
	}
	dyn, err := b.fluxClient()
	if err != nil {
		return false, "", err
	}
	name := FluxGitRepositoryPrefix + b.clusterID
	where := "GitRepository " + FluxNamespace + "/" + name
	repo, err := dyn.Resource(GitRepositoryResource).Namespace(FluxNamespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Also what the API server answers when Flux's CRD is not installed.
		return true, fmt.Sprintf("no Flux %s: %v; the cluster applies its tree with another engine, whose trust gitpeer cannot see", where, err), nil
	case apierrors.IsForbidden(err):
		// RBAC answers before the resource is looked up: a cluster without
		// Flux, where the Role gitpeer-flux (in a namespace that does not
		// exist) was left out, is told by discovery, which needs no Role.
		if served, derr := b.served(ctx, GitRepositoryResource); derr == nil && !served {
			return true, fmt.Sprintf("no Flux %s: the API server serves no %s (Flux is not installed); the cluster applies its tree with another engine, whose trust gitpeer cannot see", where, GitRepositoryResource.GroupResource()), nil
		}
		return false, "", fmt.Errorf("get %s: %w (gitpeer needs get on gitrepositories.source.toolkit.fluxcd.io in %s: Role gitpeer-flux of manifests/rbac)", where, err, FluxNamespace)
	case err != nil:
		return false, "", fmt.Errorf("get %s: %w", where, err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(repo.Object, "spec", "verify"); !found {
		return true, fmt.Sprintf("%s has no spec.verify: Flux applies the branch without checking who signed it, so any key will do", where), nil
	}
	secretName, _, err := unstructured.NestedString(repo.Object, "spec", "verify", "secretRef", "name")
	if err != nil {
		return false, "", fmt.Errorf("%s: spec.verify.secretRef.name: %w", where, err)
	}
	if secretName != FluxVerifySecretName {
		return false, fmt.Sprintf("%s verifies with Secret %q, which gitpeer does not keep: generate %s/%s without a name hash, created only if absent, as docs/gitops.md shows (secretGenerator options disableNameSuffixHash: true and annotation kustomize.toolkit.fluxcd.io/ssa: IfNotPresent), so that the cluster's tree can add the next key to it",
			where, secretName, FluxNamespace, FluxVerifySecretName), nil
	}
	secretWhere := "secret " + FluxNamespace + "/" + secretName
	secret, err := b.core.Secrets(FluxNamespace).Get(ctx, secretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, fmt.Sprintf("%s verifies with %s, which does not exist: Flux verifies nothing until it does; apply the overlay of docs/gitops.md", where, secretWhere), nil
	case apierrors.IsForbidden(err):
		return false, "", fmt.Errorf("get %s: %w (gitpeer needs get on secrets named %s in %s: Role gitpeer-flux of manifests/rbac)", secretWhere, err, secretName, FluxNamespace)
	case err != nil:
		return false, "", fmt.Errorf("get %s: %w", secretWhere, err)
	}
	var keys []string
	for k, v := range secret.Data {
		if !strings.HasSuffix(k, ".sshpub") && !strings.HasSuffix(k, ".asc") {
			continue
		}
		keys = append(keys, k)
		if bytes.Equal(bytes.TrimSpace(v), want) {
			return true, fmt.Sprintf("%s trusts the key (%s, key %s)", where, secretWhere, k), nil
		}
	}
	sort.Strings(keys)
	return false, fmt.Sprintf("%s (of %s) does not hold the key yet (it holds %s): Flux has not applied the head of the cluster's tree that announces it; see flux get kustomizations gitpeer-%s",
		secretWhere, where, keysOrNone(keys), b.clusterID), nil
}

// keysOrNone lists keys for a message.
func keysOrNone(keys []string) string {
	if len(keys) == 0 {
		return "no key ending in .sshpub or .asc"
	}
	return strings.Join(keys, ", ")
}

// served reports whether the API server serves gvr, from discovery through
// Options.Config (an error without it).
func (b *Backend) served(ctx context.Context, gvr schema.GroupVersionResource) (bool, error) {
	if b.opts.Config == nil {
		return false, errors.New("kubernetes backend: no rest config for discovery")
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(b.opts.Config))
	if err != nil {
		return false, err
	}
	// As ServerResourcesForGroupVersion does, with ctx.
	raw, err := dc.RESTClient().Get().AbsPath("/apis", gvr.Group, gvr.Version).Do(ctx).Raw()
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(raw, &list); err != nil {
		return false, fmt.Errorf("discovery of %s: %w", gvr.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// fluxClient is Options.Dynamic, else a dynamic client of Options.Config
// (for Flux's and Argo CD's objects).
func (b *Backend) fluxClient() (dynamic.Interface, error) {
	if b.opts.Dynamic != nil {
		return b.opts.Dynamic, nil
	}
	if b.opts.Config == nil {
		return nil, errors.New("kubernetes backend: no client for Flux's GitRepositories (Options.Dynamic and Options.Config are nil)")
	}
	cfg := rest.CopyConfig(b.opts.Config)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "gitpeer"
	}
	// Not kept: client-go shares the transport of equal configs already,
	// and a Backend is read by concurrent passes.
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes backend: %w", err)
	}
	return dyn, nil
}
