package liqo_test

import (
	"bytes"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqokubeconfig "github.com/liqotech/liqo/pkg/utils/kubeconfig"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
)

// issued is a consumer's key and the Identity a provider's CA issued for it.
type issued struct {
	keyPEM   []byte
	identity *authv1beta1.Identity
	caPEM    []byte
}

func issue(t testing.TB, proxyURL *string) issued {
	t.Helper()
	key, err := handshake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := handshake.MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca, _, err := handshake.NewCA("cl-provider-ca", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := handshake.ControlPlaneCSR(key, "cl-consumer")
	if err != nil {
		t.Fatal(err)
	}
	crt, err := ca.SignCSR(csr, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := authv1beta1.AuthParams{APIServer: "https://cl-provider.example:6443", CA: ca.CertPEM, SignedCRT: crt, ProxyURL: proxyURL}
	return issued{keyPEM: keyPEM, identity: liqo.ControlPlaneIdentity("cl-consumer", "cl-provider", p), caPEM: ca.CertPEM}
}

func TestKubeconfigIsBuiltAsLiqoBuildsIt(t *testing.T) {
	proxy := "http://10.0.0.8:8118"
	for name, proxyURL := range map[string]*string{"without a proxy": nil, "with a proxy": &proxy} {
		t.Run(name, func(t *testing.T) {
			in := issue(t, proxyURL)
			id := in.identity
			got, err := liqo.Kubeconfig(id, in.keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			p := id.Spec.AuthParams
			want, err := liqokubeconfig.GenerateKubeconfig(id.Name, string(id.Spec.ClusterID), p.APIServer, p.CA, p.SignedCRT, in.keyPEM, p.ProxyURL, id.Spec.Namespace)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("kubeconfig differs from Liqo's GenerateKubeconfig:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestKubeconfigReadsAsAClientConfig(t *testing.T) {
	proxy := "http://10.0.0.8:8118"
	in := issue(t, &proxy)
	data, err := liqo.Kubeconfig(in.identity, in.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "default-context" {
		t.Errorf("current context %q", cfg.CurrentContext)
	}
	ctx := cfg.Contexts["default-context"]
	if ctx == nil || ctx.Cluster != "cl-provider" || ctx.AuthInfo != "controlplane-cl-provider" || ctx.Namespace != "liqo-tenant-cl-consumer" {
		t.Fatalf("context %+v: want cluster = provider ID, user = identity name, namespace = provider-side tenant namespace", ctx)
	}
	cl := cfg.Clusters["cl-provider"]
	if cl == nil || cl.Server != "https://cl-provider.example:6443" || !bytes.Equal(cl.CertificateAuthorityData, in.caPEM) || cl.ProxyURL != proxy {
		t.Fatalf("cluster %+v", cl)
	}
	user := cfg.AuthInfos["controlplane-cl-provider"]
	if user == nil || !bytes.Equal(user.ClientKeyData, in.keyPEM) || !bytes.Equal(user.ClientCertificateData, in.identity.Spec.AuthParams.SignedCRT) {
		t.Fatalf("user %+v", user)
	}
	if len(cfg.Clusters) != 1 || len(cfg.Contexts) != 1 || len(cfg.AuthInfos) != 1 {
		t.Errorf("kubeconfig has %d clusters, %d contexts, %d users; want one each", len(cfg.Clusters), len(cfg.Contexts), len(cfg.AuthInfos))
	}

	// client-go builds a TLS client from it: the certificate matches the key
	// and the CA is the provider's.
	rc, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := rest.TLSConfigFor(rc)
	if err != nil {
		t.Fatalf("client-go cannot build TLS from the kubeconfig: %v", err)
	}
	if len(tlsCfg.Certificates) != 1 && tlsCfg.GetClientCertificate == nil {
		t.Fatal("no client certificate")
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(in.caPEM)
	if !tlsCfg.RootCAs.Equal(pool) {
		t.Error("the TLS client does not trust exactly the provider's CA")
	}
}

func TestKubeconfigOfAControlPlaneIdentityWithoutNamespace(t *testing.T) {
	in := issue(t, nil)
	in.identity.Spec.Namespace = nil
	data, err := liqo.Kubeconfig(in.identity, in.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if ns := cfg.Contexts["default-context"].Namespace; ns != "" {
		t.Errorf("namespace %q, want none", ns)
	}
}

func TestKubeconfigRefusesAnIdentityWithoutCredentials(t *testing.T) {
	cases := map[string]func(p *authv1beta1.AuthParams){
		"no API server":  func(p *authv1beta1.AuthParams) { p.APIServer = "" },
		"no certificate": func(p *authv1beta1.AuthParams) { p.SignedCRT = nil },
	}
	for name, edit := range cases {
		t.Run("refuses "+name, func(t *testing.T) {
			in := issue(t, nil)
			edit(&in.identity.Spec.AuthParams)
			data, err := liqo.Kubeconfig(in.identity, in.keyPEM)
			if err == nil {
				t.Fatalf("built %s", data)
			}
			if !strings.Contains(err.Error(), "controlplane-cl-provider") {
				t.Errorf("error %q does not name the identity", err)
			}
		})
	}
}
