package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/gitpeer/gitpeer/internal/backend"
)

// The GitOps sources PinSource points at the newest seal: GitRepository
// flux-system/gitpeer-<cluster ID> of manifests/flux (FluxNamespace,
// FluxGitRepositoryPrefix) and Application argocd/gitpeer-<cluster ID> of
// manifests/argocd/application.
const (
	// ArgoNamespace is Argo CD's namespace, where manifests/argocd puts
	// its Application.
	ArgoNamespace = "argocd"
	// ArgoApplicationPrefix prefixes the cluster ID in the Application's
	// name.
	ArgoApplicationPrefix = "gitpeer-"
	// SourcePinFieldManager is the server-side apply field manager that
	// owns the pinned field (GitRepository spec.ref.commit, Application
	// spec.source.targetRevision) and nothing else: whatever applies the
	// source object (kustomize-controller, an Argo CD app of apps, kubectl)
	// never sets that field, so it never owns or reverts it. Nothing else
	// may apply these objects with this manager name: server-side apply
	// would drop every other field it owned.
	SourcePinFieldManager = "gitpeer"

	// FluxReconcileAnnotation asks a Flux object to reconcile now, whatever
	// its interval: its value (a timestamp, RFC 3339) is what `flux
	// reconcile` sets and what the controller echoes in
	// status.lastHandledReconcileAt (fluxcd/pkg/apis/meta
	// ReconcileRequestAnnotation).
	FluxReconcileAnnotation = "reconcile.fluxcd.io/requestedAt"
	// ArgoRefreshAnnotation asks Argo CD to refresh an Application now
	// (value "normal": compare with the source again), as `argocd app
	// get --refresh` does; Argo CD removes it once done.
	ArgoRefreshAnnotation = "argocd.argoproj.io/refresh"
	// FluxKustomizationPrefix prefixes the cluster ID in the name of the
	// Kustomization flux-system/gitpeer-<cluster ID> of manifests/flux,
	// which applies clusters/<cluster ID>/ from the GitRepository.
	FluxKustomizationPrefix = "gitpeer-"
)

// KustomizationResource is Flux's Kustomization
// (kustomize.toolkit.fluxcd.io/v1).
var KustomizationResource = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}

// ArgoApplicationResource is Argo CD's Application (argoproj.io/v1alpha1).
var ArgoApplicationResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

var _ backend.SourcePinner = (*Backend)(nil)

// PinSource implements backend.SourcePinner: it points the cluster's GitOps
// source at commit, the newest seal (a hex hash of 40 or 64 lowercase
// digits, else an error), through Options.Dynamic (else a client of
// Options.Config):
//   - GitRepository flux-system/gitpeer-<cluster ID>: spec.ref.commit,
//     spec.ref.branch and spec.verify kept. source-controller then checks
//     out that commit on the branch and verifies its signature; a branch
//     moved elsewhere changes nothing, and one moved to an older seal (from
//     which the newest is not reachable) fails the fetch, the last artifact
//     kept (docs/trust.md);
//   - else Application argocd/gitpeer-<cluster ID>: spec.source.targetRevision
//     (an Application with spec.sources is an error: it is not
//     manifests/argocd's). The field named the applied branch before the
//     first seal, so whatever applies the Application owns it too:
//     gitpeer's apply is forced, and that applier must ignore the field
//     (Argo CD: ignoreDifferences with RespectIgnoreDifferences);
//   - else "" and no error: the cluster applies its tree with another
//     engine, or none yet (no such object, or Flux's or Argo CD's CRD not
//     installed).
//
// The field is written by server-side apply with SourcePinFieldManager. For
// the GitRepository without force: spec.ref.commit is a field of its own,
// which manifests/flux never sets, so another manager owning it (an applier
// that sets it) is a Conflict error naming that manager, never a tug of
// war. A source pinned
// to commit already is only read. Forbidden errors name the Role rule of
// manifests/rbac that grants the request.
//
// So that the seal is applied in seconds rather than at the engine's next
// interval, the same apply that moves the pin asks the engine to act now,
// as `flux reconcile source git` and `argocd app get --refresh` do: the
// annotation FluxReconcileAnnotation (the time, RFC 3339) on the
// GitRepository, then a JSON merge patch of the same annotation on the
// Kustomization flux-system/gitpeer-<cluster ID> that applies the tree
// (as `flux reconcile kustomization` does; none there is fine); or
// ArgoRefreshAnnotation on the Application.
func (b *Backend) PinSource(ctx context.Context, commit string) (string, error) {
	if !isCommitHash(commit) {
		return "", fmt.Errorf("pin source: %q is not a commit hash (40 or 64 lowercase hex digits)", commit)
	}
	dyn, err := b.fluxClient()
	if err != nil {
		return "", err
	}
	where, err := b.pinFlux(ctx, dyn, commit)
	if where != "" || err != nil {
		return where, err
	}
	return b.pinArgo(ctx, dyn, commit)
}

// pinFlux pins GitRepository flux-system/gitpeer-<id>; "" and no error
// when there is none.
func (b *Backend) pinFlux(ctx context.Context, dyn dynamic.Interface, commit string) (string, error) {
	src := pinTarget{
		gvr:       GitRepositoryResource,
		kind:      "GitRepository",
		namespace: FluxNamespace,
		name:      FluxGitRepositoryPrefix + b.clusterID,
		field:     []string{"spec", "ref", "commit"},
		role:      "Role gitpeer-flux of manifests/rbac",
	}
	obj, err := src.get(ctx, b, dyn)
	if obj == nil || err != nil {
		return "", err
	}
	if ref, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "ref"); found {
		if _, ok := ref.(map[string]any); !ok {
			return "", fmt.Errorf("%s: spec.ref is %T, not an object", src.where(), ref)
		}
	}
	token := b.opts.Now().UTC().Format(time.RFC3339Nano)
	src.annotation = [2]string{FluxReconcileAnnotation, token}
	where, moved, err := src.pin(ctx, dyn, obj, commit)
	if err != nil || !moved {
		return where, err
	}
	if err := b.requestKustomization(ctx, dyn, token); err != nil {
		return "", err
	}
	return where, nil
}

// requestKustomization asks Kustomization flux-system/gitpeer-<id> to
// reconcile now (FluxReconcileAnnotation set to token), by a JSON merge
// patch as `flux reconcile kustomization` makes it: it never creates the
// object, and no applier of the Kustomization sets the annotation, so
// there is no field to contend for. None there (named otherwise, or Flux
// without it) is not an error: Flux applies the seal at its interval.
func (b *Backend) requestKustomization(ctx context.Context, dyn dynamic.Interface, token string) error {
	name := FluxKustomizationPrefix + b.clusterID
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{FluxReconcileAnnotation: token}}})
	if err != nil {
		return err
	}
	_, err = dyn.Resource(KustomizationResource).Namespace(FluxNamespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: SourcePinFieldManager})
	where := "Kustomization " + FluxNamespace + "/" + name
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("request a reconcile of %s: %w (gitpeer needs patch on %s named %s in %s: Role gitpeer-flux of manifests/rbac)",
			where, err, KustomizationResource.GroupResource(), name, FluxNamespace)
	}
	return fmt.Errorf("request a reconcile of %s: %w", where, err)
}

// pinArgo pins Application argocd/gitpeer-<id>; "" and no error when there
// is none.
func (b *Backend) pinArgo(ctx context.Context, dyn dynamic.Interface, commit string) (string, error) {
	src := pinTarget{
		gvr:       ArgoApplicationResource,
		kind:      "Application",
		namespace: ArgoNamespace,
		name:      ArgoApplicationPrefix + b.clusterID,
		field:     []string{"spec", "source", "targetRevision"},
		role:      "Role gitpeer-argocd of manifests/rbac/argocd",
		// The Application names the applied branch in this same field
		// until the first seal, so whatever applies it owns the field
		// too: gitpeer takes it, and that applier must ignore it
		// (ignoreDifferences with RespectIgnoreDifferences, docs/gitops.md).
		force:      true,
		annotation: [2]string{ArgoRefreshAnnotation, "normal"},
	}
	obj, err := src.get(ctx, b, dyn)
	if obj == nil || err != nil {
		return "", err
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "source"); !found {
		if _, multi, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "sources"); multi {
			return "", fmt.Errorf("%s has spec.sources, not the spec.source of manifests/argocd: gitpeer cannot tell which source to pin to seal %s", src.where(), commit)
		}
		return "", fmt.Errorf("%s has no spec.source: gitpeer cannot pin it to seal %s", src.where(), commit)
	}
	where, _, err := src.pin(ctx, dyn, obj, commit)
	return where, err
}

// pinTarget is one GitOps source object and the field that pins it.
type pinTarget struct {
	gvr                   schema.GroupVersionResource
	kind, namespace, name string
	field                 []string // the path of the pinned field
	role                  string   // what grants get and patch on it
	// force takes the field from another manager. Without it, another
	// manager owning the field is a Conflict error naming it.
	force bool
	// annotation is the annotation (name, value) the same apply sets to
	// ask the engine to act on the new pin now.
	annotation [2]string
}

func (p pinTarget) where() string { return p.kind + " " + p.namespace + "/" + p.name }

// get reads the object; nil and no error when it does not exist or its
// kind is not served.
func (p pinTarget) get(ctx context.Context, b *Backend, dyn dynamic.Interface) (*unstructured.Unstructured, error) {
	obj, err := dyn.Resource(p.gvr).Namespace(p.namespace).Get(ctx, p.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Also what the API server answers when the CRD is not installed.
		return nil, nil
	case apierrors.IsForbidden(err):
		// RBAC answers before the resource is looked up: on a cluster
		// without this engine the Role (in a namespace that does not
		// exist) was left out, and discovery, which needs no Role, tells.
		if served, derr := b.served(ctx, p.gvr); derr == nil && !served {
			return nil, nil
		}
		return nil, fmt.Errorf("get %s: %w (gitpeer needs %s)", p.where(), err, p.permission())
	case err != nil:
		return nil, fmt.Errorf("get %s: %w", p.where(), err)
	}
	return obj, nil
}

// pin sets the field of obj (as read) to commit, and p.annotation, unless
// the field holds commit already; moved says whether it wrote.
func (p pinTarget) pin(ctx context.Context, dyn dynamic.Interface, obj *unstructured.Unstructured, commit string) (where string, moved bool, err error) {
	field := strings.Join(p.field, ".")
	cur, _, err := unstructured.NestedFieldNoCopy(obj.Object, p.field...)
	if err != nil {
		return "", false, fmt.Errorf("%s: %s: %w", p.where(), field, err)
	}
	if cur == commit {
		return p.where(), false, nil
	}
	// Only the pinned field and what identifies the object: server-side
	// apply merges it into the object (the ref and source maps are
	// granular), and this manager owns nothing else. The UID makes the
	// apply fail instead of creating a stub when the object was deleted
	// and made again since the read.
	patch := &unstructured.Unstructured{Object: map[string]any{}}
	patch.SetAPIVersion(p.gvr.GroupVersion().String())
	patch.SetKind(p.kind)
	patch.SetNamespace(p.namespace)
	patch.SetName(p.name)
	patch.SetUID(obj.GetUID())
	if p.annotation[0] != "" {
		patch.SetAnnotations(map[string]string{p.annotation[0]: p.annotation[1]})
	}
	if err := unstructured.SetNestedField(patch.Object, commit, p.field...); err != nil {
		return "", false, err
	}
	apply := func(force bool) error {
		_, err := dyn.Resource(p.gvr).Namespace(p.namespace).Apply(ctx, p.name, patch, metav1.ApplyOptions{FieldManager: SourcePinFieldManager, Force: force})
		return err
	}
	err = apply(p.force)
	if isFieldConflict(err) && onlyAnnotationConflicts(err, p.annotation[0]) {
		// `flux reconcile` (a merge patch) took the request annotation
		// from this manager: a request token, nobody's to keep. The pinned
		// field itself is never forced this way.
		err = apply(true)
	}
	switch {
	case apierrors.IsForbidden(err):
		return "", false, fmt.Errorf("pin %s to %s: %w (gitpeer needs %s)", p.where(), commit, err, p.permission())
	case isFieldConflict(err):
		return "", false, fmt.Errorf("pin %s to %s: %w (%s has another writer: whatever applies %s must leave that field out, gitpeer (field manager %s) is its only writer; docs/gitops.md)",
			p.where(), commit, err, field, p.kind, SourcePinFieldManager)
	case err != nil:
		return "", false, fmt.Errorf("pin %s to %s: %w", p.where(), commit, err)
	}
	return p.where(), true, nil
}

// onlyAnnotationConflicts reports whether every field of a server-side
// apply conflict is the annotation name (fields read as
// .metadata.annotations.<name>).
func onlyAnnotationConflicts(err error, name string) bool {
	var status apierrors.APIStatus
	if name == "" || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	n := 0
	for _, c := range status.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		if c.Field != ".metadata.annotations."+name {
			return false
		}
		n++
	}
	return n > 0
}

// permission names the Role rule that grants get and patch on the object.
func (p pinTarget) permission() string {
	return fmt.Sprintf("get and patch on %s named %s in %s: %s", p.gvr.GroupResource(), p.name, p.namespace, p.role)
}

// isFieldConflict reports whether err is server-side apply's refusal to
// take a field another manager owns.
func isFieldConflict(err error) bool {
	if !apierrors.IsConflict(err) {
		return false
	}
	return apierrors.HasStatusCause(err, metav1.CauseTypeFieldManagerConflict)
}

// isCommitHash reports whether s is a full SHA-1 or SHA-256 commit hash in
// lowercase hex, as Git prints them.
func isCommitHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
