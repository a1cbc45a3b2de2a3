package liqo

import (
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqocore "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceSlice labels and annotations (pkg/consts, forge/resourceslice.go).
const (
	LabelReplication             = "liqo.io/replication"
	LabelRemoteID                = "liqo.io/remoteID"
	LabelResourceSliceName       = "liqo.io/resourceslice-name"
	AnnotationCreateVirtualNode  = "liqo.io/create-virtual-node"
	resourceSliceIdentityPrefix  = "resourceslice-"
	ReasonSliceAuthAccepted      = "ResourceSliceAuthenticationAccepted"
	ReasonSliceAuthDenied        = "ResourceSliceAuthenticationDenied"
	ReasonSliceResourcesAccepted = "ResourceSliceResourcesAccepted"
	ReasonSliceResourcesDenied   = "ResourceSliceResourcesDenied"
)

// ResourceSlice is a consumer's request for resources from providerID, as
// `liqoctl create resourceslice` and Liqo's local ResourceSlice controller
// build it (forge/resourceslice.go): in the consumer's tenant namespace for
// the provider, replication labels set, the virtual-node annotation unless
// disabled, spec with both cluster IDs, class, resources and the slice CSR.
func ResourceSlice(name, consumerID, providerID string, class string, resources corev1.ResourceList, createVirtualNode bool, csrPEM []byte) *authv1beta1.ResourceSlice {
	consumer, provider := liqocore.ClusterID(consumerID), liqocore.ClusterID(providerID)
	rs := &authv1beta1.ResourceSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.ResourceSliceKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: TenantNamespace(providerID),
			Labels: map[string]string{
				LabelReplication:     "true",
				LabelRemoteID:        providerID,
				LabelRemoteClusterID: providerID,
			},
		},
		Spec: authv1beta1.ResourceSliceSpec{
			ConsumerClusterID: &consumer,
			ProviderClusterID: &provider,
			Resources:         resources,
			Class:             authv1beta1.ResourceSliceClass(class),
			CSR:               csrPEM,
		},
	}
	if createVirtualNode {
		rs.Annotations = map[string]string{AnnotationCreateVirtualNode: "true"}
	}
	return rs
}

// ResourceSliceIdentityName is "resourceslice-<slice>".
func ResourceSliceIdentityName(slice string) string { return resourceSliceIdentityPrefix + slice }

// ResourceSliceIdentity is the Identity Liqo's identitycreator controller
// makes from an accepted ResourceSlice: "resourceslice-<name>" in the slice's
// namespace, labelled with the provider ID and the slice name, type
// ResourceSlice, carrying the slice's authParams.
func ResourceSliceIdentity(slice, providerID string, params authv1beta1.AuthParams) *authv1beta1.Identity {
	return &authv1beta1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ResourceSliceIdentityName(slice),
			Namespace: TenantNamespace(providerID),
			Labels:    map[string]string{LabelRemoteClusterID: providerID, LabelResourceSliceName: slice},
		},
		Spec: authv1beta1.IdentitySpec{
			ClusterID:  liqocore.ClusterID(providerID),
			Type:       authv1beta1.ResourceSliceIdentityType,
			AuthParams: params,
		},
	}
}

// DecodeResourceSlice parses a ResourceSlice (authentication.liqo.io/v1beta1).
// Errors are *DecodeError.
func DecodeResourceSlice(data []byte) (*authv1beta1.ResourceSlice, error) {
	var rs authv1beta1.ResourceSlice
	if err := decodeStrict(data, authv1beta1.GroupVersion.String(), authv1beta1.ResourceSliceKind, &rs); err != nil {
		return nil, err
	}
	return &rs, nil
}
