package artifact_test

import (
	"bytes"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
)

func TestParseNonceReadsWhatTheProviderWrites(t *testing.T) {
	f := newFixture(t)
	for name, n := range map[string]artifact.Nonce{
		"a nonce with an expiry":  f.nonce,
		"a nonce that never ends": {Value: f.nonce.Value, Epoch: 1_790_000_000},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := artifact.ParseNonce(nonceFile, encode(t, artifact.NonceSecret(consumer, n)), consumer)
			if err != nil {
				t.Fatal(err)
			}
			if got.Value != n.Value || got.Epoch != n.Epoch || !got.Expires.Equal(n.Expires) {
				t.Errorf("parsed %+v, want %+v", got, n)
			}
		})
	}
}

func TestParseNonceRefusals(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		edit   func(s *corev1.Secret)
		field  string
		reason string
	}{
		{"refuses a nonce in another tenant namespace", func(s *corev1.Secret) { s.Namespace = liqo.TenantNamespace("gamma") },
			"metadata.namespace", reasons.MalformedArtifact},
		{"refuses a nonce without the nonce label", func(s *corev1.Secret) { delete(s.Labels, liqo.LabelNonce) },
			"metadata.labels", reasons.MalformedArtifact},
		{"refuses a nonce label that is not true", func(s *corev1.Secret) { s.Labels[liqo.LabelNonce] = "false" },
			"metadata.labels", reasons.MalformedArtifact},
		{"refuses a nonce issued to another cluster", func(s *corev1.Secret) { s.Labels[liqo.LabelRemoteClusterID] = "gamma" },
			"metadata.labels", reasons.MalformedArtifact},
		{"refuses a nonce that is too short", func(s *corev1.Secret) { s.Data["nonce"] = s.Data["nonce"][:87] },
			"data.nonce", reasons.InvalidNonce},
		{"refuses a nonce with a line break", func(s *corev1.Secret) { s.Data["nonce"][40] = '\n' },
			"data.nonce", reasons.InvalidNonce},
		{"refuses a nonce that is not base64", func(s *corev1.Secret) { s.Data["nonce"][0] = '*' },
			"data.nonce", reasons.InvalidNonce},
		{"refuses a nonce without an epoch", func(s *corev1.Secret) { delete(s.Annotations, artifact.AnnotationNonceEpoch) },
			"metadata.annotations", reasons.MalformedArtifact},
		{"refuses an epoch that is not a number", func(s *corev1.Secret) { s.Annotations[artifact.AnnotationNonceEpoch] = "seven" },
			"metadata.annotations", reasons.MalformedArtifact},
		{"refuses a negative epoch", func(s *corev1.Secret) { s.Annotations[artifact.AnnotationNonceEpoch] = "-1" },
			"metadata.annotations", reasons.MalformedArtifact},
		{"refuses an epoch beyond 64 bits", func(s *corev1.Secret) { s.Annotations[artifact.AnnotationNonceEpoch] = "18446744073709551616" },
			"metadata.annotations", reasons.MalformedArtifact},
		{"refuses an expiry that is not RFC 3339", func(s *corev1.Secret) { s.Annotations[artifact.AnnotationNonceExpires] = "tomorrow" },
			"metadata.annotations", reasons.MalformedArtifact},
		{"refuses another secret's name", func(s *corev1.Secret) { s.Name = "liqo-signed-nonce" },
			"metadata.name", reasons.MalformedArtifact},
		{"refuses a secret without data.nonce", func(s *corev1.Secret) { s.Data = nil },
			"data.nonce", reasons.MalformedArtifact},
		{"refuses a Secret of another kind", func(s *corev1.Secret) { s.Kind = "ConfigMap" },
			"kind", reasons.MalformedArtifact},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := artifact.NonceSecret(consumer, f.nonce)
			tc.edit(s)
			n, err := artifact.ParseNonce(nonceFile, encode(t, s), consumer)
			if err == nil {
				t.Fatalf("accepted %+v", n)
			}
			wantRefusal(t, err, nonceFile, tc.field, tc.reason)
			if strings.Contains(err.Error(), f.nonce.Value) {
				t.Error("the refusal repeats the nonce")
			}
		})
	}
	t.Run("refuses a document that is not YAML", func(t *testing.T) {
		_, err := artifact.ParseNonce(nonceFile, []byte("\t: ["), consumer)
		wantRefusal(t, err, nonceFile, "", reasons.MalformedArtifact)
	})
}

func TestVerifyTenant(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(t *testing.T, f *fixture, tn *authv1beta1.Tenant, c *artifact.TenantCheck)
		raw    func(data []byte) []byte
		field  string
		reason string // "" when the Tenant must be accepted
	}{
		{name: "accepts the consumer's Tenant for the pinned key"},
		{name: "accepts an explicit KeysExchange policy", edit: func(_ *testing.T, _ *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			p := authv1beta1.KeysExchange
			tn.Spec.AuthzPolicy = &p
		}},
		{name: "accepts the key the spec's fingerprint pins", edit: func(_ *testing.T, f *fixture, _ *authv1beta1.Tenant, c *artifact.TenantCheck) {
			c.Fingerprint, _ = handshake.Fingerprint(f.key.Public())
		}},
		{name: "accepts any consistent key while nothing is pinned yet", edit: func(t *testing.T, f *fixture, tn *authv1beta1.Tenant, c *artifact.TenantCheck) {
			c.PinnedKeyDER = nil
			tn.Spec.PublicKey, _ = handshake.MarshalPublicKey(f.other.Public())
			tn.Spec.Signature, _ = handshake.SignNonce(f.other, f.nonce.Value)
			tn.Spec.CSR, _ = handshake.ControlPlaneCSR(f.other, consumer)
		}},
		{name: "refuses a Tenant that asks to skip the handshake", edit: func(_ *testing.T, _ *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			p := authv1beta1.TolerateNoHandshake
			tn.Spec.AuthzPolicy = &p
		}, field: "spec.authzPolicy", reason: reasons.MalformedArtifact},
		{name: "refuses another consumer's Tenant name", edit: func(_ *testing.T, _ *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Name = "gamma"
		}, field: "metadata.name", reason: reasons.MalformedArtifact},
		{name: "refuses a Tenant carrying a status namespace", edit: func(_ *testing.T, _ *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Status.TenantNamespace = "liqo-tenant-alpha"
		}, field: "status", reason: reasons.MalformedArtifact},
		{name: "refuses a Tenant carrying authParams in its status", edit: func(_ *testing.T, f *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Status.AuthParams = &authv1beta1.AuthParams{APIServer: "https://evil.example", CA: f.otherCA.CertPEM}
		}, field: "status", reason: reasons.MalformedArtifact},
		{name: "refuses a Tenant in another namespace", edit: func(_ *testing.T, _ *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Namespace = "liqo"
		}, field: "metadata.namespace", reason: reasons.MalformedArtifact},
		{name: "refuses a Tenant without the remote-cluster-id label", edit: func(_ *testing.T, _ *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Labels = nil
		}, field: "metadata.labels", reason: reasons.MalformedArtifact},
		{name: "refuses a Tenant for another cluster ID", edit: func(_ *testing.T, _ *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Spec.ClusterID = "gamma"
		}, field: "spec.clusterID", reason: reasons.MalformedArtifact},
		{name: "refuses a public key that does not parse", edit: func(_ *testing.T, _ *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Spec.PublicKey = []byte("not a key")
		}, field: "spec.publicKey", reason: reasons.InvalidPublicKey},
		{name: "refuses a consistent Tenant signed with a key that is not pinned", edit: func(_ *testing.T, f *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Spec.PublicKey, _ = handshake.MarshalPublicKey(f.other.Public())
			tn.Spec.Signature, _ = handshake.SignNonce(f.other, f.nonce.Value)
			tn.Spec.CSR, _ = handshake.ControlPlaneCSR(f.other, consumer)
		}, field: "spec.publicKey", reason: reasons.KeyNotPinned},
		{name: "refuses a key the spec's fingerprint does not pin", edit: func(_ *testing.T, f *fixture, _ *authv1beta1.Tenant, c *artifact.TenantCheck) {
			c.PinnedKeyDER = nil
			c.Fingerprint, _ = handshake.Fingerprint(f.other.Public())
		}, field: "spec.publicKey", reason: reasons.KeyNotPinned},
		{name: "refuses a signature over an older nonce", edit: func(_ *testing.T, f *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Spec.Signature, _ = handshake.SignNonce(f.key, handshake.DeriveNonce([]byte("beta's secret"), consumer, 6))
		}, field: "spec.signature", reason: reasons.SignatureVerificationFailed},
		{name: "refuses an empty signature", edit: func(_ *testing.T, _ *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Spec.Signature = nil
		}, field: "spec.signature", reason: reasons.SignatureVerificationFailed},
		{name: "refuses a signature by another key", edit: func(_ *testing.T, f *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Spec.Signature, _ = handshake.SignNonce(f.other, f.nonce.Value)
		}, field: "spec.signature", reason: reasons.SignatureVerificationFailed},
		{name: "refuses a CSR with a second organization", edit: func(t *testing.T, f *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Spec.CSR = rawCSR(t, f.key, pkix.Name{CommonName: consumer, Organization: []string{"liqo.io", "system:masters"}})
		}, field: "spec.csr", reason: reasons.InvalidCSR},
		{name: "refuses a CSR with a trailing newline too many", edit: func(_ *testing.T, _ *fixture, tn *authv1beta1.Tenant, _ *artifact.TenantCheck) {
			tn.Spec.CSR = append(tn.Spec.CSR, '\n')
		}, field: "spec.csr", reason: reasons.InvalidCSR},
		{name: "refuses a Tenant of another kind", raw: func(d []byte) []byte {
			return bytes.Replace(d, []byte("kind: Tenant"), []byte("kind: Identity"), 1)
		}, field: "kind", reason: reasons.MalformedArtifact},
		{name: "refuses a Tenant with an unknown field", raw: func(d []byte) []byte {
			return bytes.Replace(d, []byte("spec:\n"), []byte("spec:\n  privateKey: eA==\n"), 1)
		}, field: "", reason: reasons.MalformedArtifact},
		{name: "refuses an empty file", raw: func([]byte) []byte { return nil }, field: "", reason: reasons.MalformedArtifact},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tn := f.tenant.DeepCopy()
			c := f.tenantCheck()
			if tc.edit != nil {
				tc.edit(t, f, tn, &c)
			}
			data := encode(t, tn)
			if tc.raw != nil {
				data = tc.raw(data)
			}
			got, err := artifact.VerifyTenant(tenantFile, data, c)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got.Name != consumer || !bytes.Equal(got.Spec.CSR, tn.Spec.CSR) {
					t.Errorf("returned %+v", got)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			wantRefusal(t, err, tenantFile, tc.field, tc.reason)
		})
	}
}

func TestTenantEpoch(t *testing.T) {
	f := newFixture(t)
	if e, err := artifact.TenantEpoch(tenantFile, f.tenant); err != nil || e != f.nonce.Epoch {
		t.Errorf("epoch %d, %v; want %d", e, err, f.nonce.Epoch)
	}
	tn := f.tenant.DeepCopy()
	tn.Annotations = nil
	_, err := artifact.TenantEpoch(tenantFile, tn)
	wantRefusal(t, err, tenantFile, "metadata.annotations", reasons.MalformedArtifact)
}

func TestVerifyIdentity(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(t *testing.T, f *fixture, id *authv1beta1.Identity, c *artifact.IdentityCheck)
		raw    func(data []byte) []byte
		field  string
		reason string
	}{
		{name: "accepts the provider's Identity"},
		{name: "accepts the published bundle in another order", edit: func(_ *testing.T, f *fixture, id *authv1beta1.Identity, c *artifact.IdentityCheck) {
			// beta publishes two CAs (a rotation); its Identity lists them the other way round.
			c.Provider.CA = string(f.ca.CertPEM) + string(f.otherCA.CertPEM)
			id.Spec.AuthParams.CA = append(append([]byte(nil), f.otherCA.CertPEM...), f.ca.CertPEM...)
		}},
		{name: "accepts a certificate still valid at Now", edit: func(_ *testing.T, _ *fixture, _ *authv1beta1.Identity, c *artifact.IdentityCheck) {
			c.Now = now.Add(23 * time.Hour)
		}},
		{name: "refuses AWS credentials", edit: func(_ *testing.T, _ *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Spec.AuthParams.AwsConfig = &authv1beta1.AwsConfig{AwsUserArn: "arn:aws:iam::1:user/x", AwsRegion: "eu-west-1"}
		}, field: "spec.authParams.awsConfig", reason: reasons.MalformedArtifact},
		{name: "refuses a ResourceSlice-type Identity", edit: func(_ *testing.T, _ *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Spec.Type = authv1beta1.ResourceSliceIdentityType
		}, field: "spec.type", reason: reasons.MalformedArtifact},
		{name: "refuses another tenant namespace on the provider", edit: func(_ *testing.T, _ *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			ns := liqo.TenantNamespace("gamma")
			id.Spec.Namespace = &ns
		}, field: "spec.namespace", reason: reasons.MalformedArtifact},
		{name: "refuses a missing tenant namespace", edit: func(_ *testing.T, _ *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Spec.Namespace = nil
		}, field: "spec.namespace", reason: reasons.MalformedArtifact},
		{name: "refuses a CA bundle with an extra certificate", edit: func(_ *testing.T, f *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Spec.AuthParams.CA = append(append([]byte(nil), f.ca.CertPEM...), f.otherCA.CertPEM...)
		}, field: "spec.authParams.ca", reason: reasons.UntrustedCA},
		{name: "refuses a CA bundle missing one of the published certificates", edit: func(_ *testing.T, f *fixture, _ *authv1beta1.Identity, c *artifact.IdentityCheck) {
			c.Provider.CA = string(f.ca.CertPEM) + string(f.otherCA.CertPEM)
		}, field: "spec.authParams.ca", reason: reasons.UntrustedCA},
		{name: "refuses an empty CA", edit: func(_ *testing.T, _ *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Spec.AuthParams.CA = nil
		}, field: "spec.authParams.ca", reason: reasons.UntrustedCA},
		{name: "refuses a certificate expired at Now", edit: func(_ *testing.T, _ *fixture, _ *authv1beta1.Identity, c *artifact.IdentityCheck) {
			c.Now = now.Add(25 * time.Hour)
		}, field: "spec.authParams.signedCRT", reason: reasons.InvalidCertificate},
		{name: "refuses a certificate not yet valid at Now", edit: func(_ *testing.T, _ *fixture, _ *authv1beta1.Identity, c *artifact.IdentityCheck) {
			c.Now = now.Add(-time.Hour)
		}, field: "spec.authParams.signedCRT", reason: reasons.InvalidCertificate},
		{name: "refuses a certificate for a slice subject", edit: func(t *testing.T, f *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Spec.AuthParams.SignedCRT = f.answer.Status.AuthParams.SignedCRT
		}, field: "spec.authParams.signedCRT", reason: reasons.InvalidCertificate},
		{name: "refuses a certificate for the consumer ID under another key", edit: func(t *testing.T, f *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			csr, _ := handshake.ControlPlaneCSR(f.other, consumer)
			id.Spec.AuthParams.SignedCRT, _ = f.ca.SignCSR(csr, now, time.Hour)
		}, field: "spec.authParams.signedCRT", reason: reasons.InvalidCertificate},
		{name: "refuses a certificate that is the CA itself", edit: func(_ *testing.T, f *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Spec.AuthParams.SignedCRT = f.ca.CertPEM
		}, field: "spec.authParams.signedCRT", reason: reasons.InvalidCertificate},
		{name: "refuses a certificate that is not PEM", edit: func(_ *testing.T, _ *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Spec.AuthParams.SignedCRT = []byte("garbage")
		}, field: "spec.authParams.signedCRT", reason: reasons.InvalidCertificate},
		{name: "refuses another API server", edit: func(_ *testing.T, _ *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Spec.AuthParams.APIServer = "https://beta.example:6443/"
		}, field: "spec.authParams.apiServer", reason: reasons.UntrustedAPIServer},
		{name: "refuses another provider's Identity name", edit: func(_ *testing.T, _ *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Name = liqo.ControlPlaneIdentityName("gamma")
		}, field: "metadata.name", reason: reasons.MalformedArtifact},
		{name: "refuses an Identity outside the provider's tenant namespace", edit: func(_ *testing.T, _ *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Namespace = "liqo"
		}, field: "metadata.namespace", reason: reasons.MalformedArtifact},
		{name: "refuses an Identity labelled for another cluster", edit: func(_ *testing.T, _ *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Labels[liqo.LabelRemoteClusterID] = "gamma"
		}, field: "metadata.labels", reason: reasons.MalformedArtifact},
		{name: "refuses an Identity for another cluster ID", edit: func(_ *testing.T, _ *fixture, id *authv1beta1.Identity, _ *artifact.IdentityCheck) {
			id.Spec.ClusterID = "gamma"
		}, field: "spec.clusterID", reason: reasons.MalformedArtifact},
		{name: "refuses another apiVersion", raw: func(d []byte) []byte {
			return bytes.Replace(d, []byte("authentication.liqo.io/v1beta1"), []byte("authentication.liqo.io/v1alpha1"), 1)
		}, field: "apiVersion", reason: reasons.MalformedArtifact},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.identity.DeepCopy()
			c := f.identityCheck()
			info := *f.info
			c.Provider = &info
			if tc.edit != nil {
				tc.edit(t, f, id, &c)
			}
			data := encode(t, id)
			if tc.raw != nil {
				data = tc.raw(data)
			}
			got, err := artifact.VerifyIdentity(identityFile, data, c)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got.Name != "controlplane-beta" {
					t.Errorf("returned %+v", got)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			wantRefusal(t, err, identityFile, tc.field, tc.reason)
		})
	}
}

func TestSameCertificates(t *testing.T) {
	f := newFixture(t)
	a, b := f.ca.CertPEM, f.otherCA.CertPEM
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := []struct {
		name string
		x, y []byte
		same bool
	}{
		{"a bundle is the same as itself", a, a, true},
		{"order does not matter", join(a, b), join(b, a), true},
		{"blank lines between blocks do not matter", join(a, []byte("\n\n"), b, []byte("\n")), join(a, b), true},
		{"a repeated certificate is still the same set", join(a, a), a, true},
		{"different certificates differ", a, b, false},
		{"an extra certificate differs", join(a, b), a, false},
		{"two empty bundles are never the same", nil, nil, false},
		{"a bundle of text is never the same", []byte("x"), []byte("x"), false},
		{"trailing text spoils a bundle", join(a, []byte("junk")), join(a, []byte("junk")), false},
		{"trailing text spoils a bundle even against a clean one", join(a, []byte("junk")), a, false},
		{"a certificate request is not a certificate", mustCSR(t, f), mustCSR(t, f), false},
		{"a certificate under another PEM type is not a certificate", retype(t, a, "TRUSTED CERTIFICATE"), a, false},
		{"a block that does not parse is never the same", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := artifact.SameCertificates(tc.x, tc.y); got != tc.same {
				t.Errorf("SameCertificates = %t, want %t", got, tc.same)
			}
			if got := artifact.SameCertificates(tc.y, tc.x); got != tc.same {
				t.Errorf("SameCertificates (swapped) = %t, want %t", got, tc.same)
			}
		})
	}
}

func mustCSR(t *testing.T, f *fixture) []byte {
	csr, err := handshake.ControlPlaneCSR(f.key, consumer)
	if err != nil {
		t.Fatal(err)
	}
	return csr
}

func retype(t *testing.T, p []byte, typ string) []byte {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatal("not PEM")
	}
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b.Bytes})
}
