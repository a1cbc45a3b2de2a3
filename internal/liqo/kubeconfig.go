package liqo

import (
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig builds the kubeconfig a consumer obtains from a ControlPlane
// Identity, as Liqo's identity controller does (pkg/utils/kubeconfig
// GenerateKubeconfig): cluster named after the provider ID (server, CA and
// proxy URL from authParams), user named after the Identity (certificate =
// signedCRT, key = the consumer's own private key, PEM), context
// "default-context" in the provider-side tenant namespace, made current.
//
// The result holds a private key: it must never be written into Git.
func Kubeconfig(identity *authv1beta1.Identity, clientKeyPEM []byte) ([]byte, error) {
	p := identity.Spec.AuthParams
	if p.APIServer == "" || len(p.SignedCRT) == 0 {
		return nil, fmt.Errorf("identity %s: authParams lack apiServer or signedCRT", identity.Name)
	}
	cluster := string(identity.Spec.ClusterID)
	user := identity.Name
	ctx := &clientcmdapi.Context{Cluster: cluster, AuthInfo: user}
	if identity.Spec.Namespace != nil {
		ctx.Namespace = *identity.Spec.Namespace
	}
	c := &clientcmdapi.Cluster{Server: p.APIServer, CertificateAuthorityData: p.CA}
	if p.ProxyURL != nil {
		c.ProxyURL = *p.ProxyURL
	}
	cfg := clientcmdapi.Config{
		Kind:           "Config",
		APIVersion:     "v1",
		Clusters:       map[string]*clientcmdapi.Cluster{cluster: c},
		Contexts:       map[string]*clientcmdapi.Context{DefaultContext: ctx},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{user: {ClientCertificateData: p.SignedCRT, ClientKeyData: clientKeyPEM}},
		CurrentContext: DefaultContext,
	}
	out, err := clientcmd.Write(cfg)
	if err != nil {
		return nil, fmt.Errorf("identity %s: write kubeconfig: %w", identity.Name, err)
	}
	return out, nil
}
