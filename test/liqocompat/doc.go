// Package liqocompat holds no code: its tests run package handshake's output
// through Liqo v1.2.0's own functions (github.com/liqotech/liqo/pkg/
// liqo-controller-manager/authentication: ParseTenantPublicKey, VerifyNonce,
// CheckCSRForControlPlane, CheckCSRForResourceSlice, GenerateCSRFor*), so
// "accepted by a real Liqo, byte for byte" is checked against Liqo's code, not
// against our reading of it. It lives apart so that package handshake itself
// stays free of Liqo's Kubernetes dependencies.
package liqocompat
