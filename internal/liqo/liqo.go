// Package liqo forges the Kubernetes objects of Liqo's authentication module
// (Tenant, Identity, nonce Secret, tenant namespace, RBAC bindings, kubeconfig)
// exactly as Liqo v1.2 builds them, and encodes them as stable YAML.
//
// Names, labels and shapes come from Liqo v1.2.0: apis/authentication/v1beta1,
// pkg/liqo-controller-manager/authentication/forge, pkg/tenantNamespace and
// pkg/utils/kubeconfig. The functions here are pure: no clients, no I/O.
package liqo

import (
	"fmt"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqocore "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Label and annotation keys Liqo reads (pkg/consts).
const (
	LabelRemoteClusterID = "liqo.io/remote-cluster-id"
	LabelTenantNamespace = "liqo.io/tenant-namespace"
	LabelNonce           = "liqo.io/nonce"
	LabelIdentityType    = "liqo.io/identity-type"
	LabelManagedBy       = "app.kubernetes.io/managed-by"

	AnnotationRemoteTenantNamespace = "liqo.io/remote-tenant-namespace"
)

// Names Liqo gives to objects (forge, tenantNamespace, tenant-controller).
const (
	NonceSecretName       = "liqo-nonce"
	NonceSecretKey        = "nonce"
	KubeconfigSecretKey   = "kubeconfig"
	DefaultContext        = "default-context"
	RemoteControlPlaneCR  = "liqo-remote-controlplane"
	ClusterWideCR         = "liqo-virtual-kubelet-remote-clusterwide"
	ControlPlaneRBName    = "liqo-binding-" + RemoteControlPlaneCR
	tenantNamespacePrefix = "liqo-tenant-"
	clusterWideCRBPrefix  = "liqo-binding-" + ClusterWideCR + "-"
	controlPlanePrefix    = "controlplane-"
	kubeconfigPrefix      = "kubeconfig-"
	managedByLiqo         = "liqo"
	podSecurityPrivileged = "privileged"
)

// TenantNamespace is the name Liqo gives the tenant namespace of a remote
// cluster: "liqo-tenant-<id>" (pkg/tenantNamespace). A cluster ID of at most
// 51 characters keeps it within the 63 of a DNS-1123 label.
func TenantNamespace(remoteID string) string { return tenantNamespacePrefix + remoteID }

// ControlPlaneIdentityName is "controlplane-<providerID>", the name of the
// ControlPlane Identity a consumer holds for a provider.
func ControlPlaneIdentityName(providerID string) string { return controlPlanePrefix + providerID }

// KubeconfigSecretName is "kubeconfig-<identityName>", the Secret Liqo's
// identity controller writes the kubeconfig of an Identity into.
func KubeconfigSecretName(identityName string) string { return kubeconfigPrefix + identityName }

// ClusterWideBindingName is the ClusterRoleBinding Liqo's tenant controller
// creates for a consumer: "liqo-binding-liqo-virtual-kubelet-remote-clusterwide-<consumerID>".
func ClusterWideBindingName(consumerID string) string { return clusterWideCRBPrefix + consumerID }

// Namespace is the tenant namespace Liqo creates for remoteID, with Liqo's
// labels: the remote cluster ID, the tenant-namespace marker and privileged
// pod security (pkg/tenantNamespace/namespaceManager.go).
func Namespace(remoteID string) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{
			Name: TenantNamespace(remoteID),
			Labels: map[string]string{
				LabelRemoteClusterID:                 remoteID,
				LabelTenantNamespace:                 "true",
				"pod-security.kubernetes.io/audit":   podSecurityPrivileged,
				"pod-security.kubernetes.io/enforce": podSecurityPrivileged,
				"pod-security.kubernetes.io/warn":    podSecurityPrivileged,
			},
		},
	}
}

// NonceSecret is the provider's Secret "liqo-nonce" holding the nonce issued to
// consumerID, in the consumer's tenant namespace, labelled so that Liqo's
// tenant controller finds it (forge/nonce.go). data.nonce is the nonce string
// (88 characters of base64); Liqo's nonce controller never overwrites a value.
func NonceSecret(consumerID, nonce string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      NonceSecretName,
			Namespace: TenantNamespace(consumerID),
			Labels: map[string]string{
				LabelNonce:           "true",
				LabelRemoteClusterID: consumerID,
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{NonceSecretKey: []byte(nonce)},
	}
}

// Tenant is the consumer's answer to a nonce, as `liqoctl generate tenant`
// prints it (forge/tenant.go): named after the consumer, labelled with its
// cluster ID, in the consumer's tenant namespace on the provider.
// publicKeyPEM is the PEM PKIX key (Liqo v1.0.2+), csrPEM the control-plane
// CSR, signature the raw signature over the nonce string.
func Tenant(consumerID string, publicKeyPEM, csrPEM, signature []byte) *authv1beta1.Tenant {
	return &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      consumerID,
			Namespace: TenantNamespace(consumerID),
			Labels:    map[string]string{LabelRemoteClusterID: consumerID},
		},
		Spec: authv1beta1.TenantSpec{
			ClusterID: liqocore.ClusterID(consumerID),
			PublicKey: publicKeyPEM,
			CSR:       csrPEM,
			Signature: signature,
		},
	}
}

// ControlPlaneIdentity is the Identity a consumer applies to reach providerID
// (forge/identity.go, `liqoctl generate identity`): "controlplane-<provider>"
// in the consumer's tenant namespace for the provider, carrying the provider's
// authParams and the provider-side tenant namespace of the consumer.
func ControlPlaneIdentity(consumerID, providerID string, params authv1beta1.AuthParams) *authv1beta1.Identity {
	remoteNamespace := TenantNamespace(consumerID)
	return &authv1beta1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ControlPlaneIdentityName(providerID),
			Namespace: TenantNamespace(providerID),
			Labels:    map[string]string{LabelRemoteClusterID: providerID},
		},
		Spec: authv1beta1.IdentitySpec{
			ClusterID:  liqocore.ClusterID(providerID),
			Type:       authv1beta1.ControlPlaneIdentityType,
			AuthParams: params,
			Namespace:  &remoteNamespace,
		},
	}
}

// ControlPlaneRoleBinding binds User <consumerID> (the CN of its certificate)
// to ClusterRole liqo-remote-controlplane in its tenant namespace, as Liqo's
// tenant controller does (pkg/tenantNamespace/bindings.go).
func ControlPlaneRoleBinding(consumerID string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: bindingMeta(ControlPlaneRBName, TenantNamespace(consumerID), consumerID),
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: consumerID}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: RemoteControlPlaneCR},
	}
}

// ClusterWideBinding binds Group <consumerID> (the O of its ResourceSlice
// certificates) to ClusterRole liqo-virtual-kubelet-remote-clusterwide, as
// Liqo v1.2's tenant controller does.
func ClusterWideBinding(consumerID string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: bindingMeta(ClusterWideBindingName(consumerID), "", consumerID),
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: consumerID}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterWideCR},
	}
}

func bindingMeta(name, namespace, consumerID string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: namespace,
		Labels:    map[string]string{LabelManagedBy: managedByLiqo, LabelRemoteClusterID: consumerID},
	}
}

// ObjectFileName is the file an object is rendered to inside a cluster's
// liqo/<peer>/ directory: "<kind>-<name>.yaml", lower-cased kind.
func ObjectFileName(kind, name string) string {
	return fmt.Sprintf("%s-%s.yaml", strings.ToLower(kind), name)
}
