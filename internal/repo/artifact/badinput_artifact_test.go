package artifact_test

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
)

// The bad-input suite for inbox artifacts: YAML a hostile or broken peer
// could commit as nonce.yaml, tenant.yaml, identity.yaml or a ResourceSlice
// request. Each is refused with an *artifact.Error naming the file, the
// field and the condition reason the reconciler reports, and never panics.
// The table also seeds the fuzz targets of fuzz_test.go.

// artifactKind says which check reads a case's input.
type artifactKind int

const (
	nonceYAML artifactKind = iota
	tenantYAML
	identityYAML
	requestYAML
)

// badArtifact is one malformed artifact.
type badArtifact struct {
	name   string
	kind   artifactKind
	input  []byte
	field  string // JSON path the refusal names; "" for the whole file
	reason string // one of package reasons' constants
	says   string // a part of the message that says why
}

// badArtifacts builds the cases from fx's valid artifacts.
func badArtifacts(t testing.TB, fx *fixture) []badArtifact {
	t.Helper()
	nonce := encode(t, artifact.NonceSecret(consumer, fx.nonce))
	tenant := encode(t, fx.tenant)
	identity := encode(t, fx.identity)
	request := encode(t, fx.request)
	edit := func(data []byte, old, new string) []byte {
		t.Helper()
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("%q not in\n%s", old, data)
		}
		return bytes.Replace(data, []byte(old), []byte(new), 1)
	}
	withNonce := func(v string) []byte {
		s := artifact.NonceSecret(consumer, fx.nonce)
		s.Data["nonce"] = []byte(v)
		return encode(t, s)
	}
	tenantWith := func(mod func(pubPEM, csr, sig *[]byte)) []byte {
		tn := fx.tenant.DeepCopy()
		mod(&tn.Spec.PublicKey, &tn.Spec.CSR, &tn.Spec.Signature)
		return encode(t, tn)
	}
	identityWithCert := func(crt []byte) []byte {
		id := fx.identity.DeepCopy()
		id.Spec.AuthParams.SignedCRT = crt
		return encode(t, id)
	}
	csr := func(key crypto.Signer, subject pkix.Name) []byte { return rawCSR(t, key, subject) }
	rsa1024 := mustRSA1024(t)
	// SignCSR never signs a certificate already expired; the CA's key can.
	expiredDER := must[[]byte](t)(x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: consumer, Organization: []string{"liqo.io"}},
		NotBefore: now.Add(-2 * time.Hour), NotAfter: now.Add(-time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, fx.ca.Cert, fx.key.Public(), fx.ca.Key))
	expired := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: expiredDER})
	// Billion laughs: nine levels of nine aliases, 9^9 nodes once expanded.
	var bomb strings.Builder
	bomb.WriteString("apiVersion: v1\nkind: Secret\na0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		prev := "*a" + string(rune('0'+i-1))
		bomb.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat(prev+", ", 8) + prev + "]\n")
	}
	const mal, badNonce = reasons.MalformedArtifact, reasons.InvalidNonce
	return []badArtifact{
		// Framing, shared by every artifact (liqo.decodeStrict).
		{name: "an empty nonce.yaml", kind: nonceYAML, input: nil, reason: mal, says: "empty document"},
		{name: "a nonce.yaml that is not YAML", kind: nonceYAML, input: []byte("{apiVersion: v1, kind: [\n"), reason: mal, says: "not a YAML object"},
		{name: "a nonce.yaml that is a list", kind: nonceYAML, input: []byte("- apiVersion: v1\n- kind: Secret\n"), reason: mal, says: "not a YAML object"},
		{name: "a nonce.yaml with another apiVersion", kind: nonceYAML, input: edit(nonce, "apiVersion: v1", "apiVersion: v2"), field: "apiVersion", reason: mal, says: `is "v2", want "v1"`},
		{name: "a nonce.yaml of another kind", kind: nonceYAML, input: edit(nonce, "kind: Secret", "kind: ConfigMap"), field: "kind", reason: mal, says: `is "ConfigMap", want "Secret"`},
		{name: "a nonce.yaml with an unknown field", kind: nonceYAML, input: append(bytes.Clone(nonce), "immutable: true\nextra: 1\n"...), reason: mal, says: `unknown field "extra"`},
		{name: "a nonce.yaml with an unknown metadata field in another case", kind: nonceYAML, input: edit(nonce, "  name: liqo-nonce", "  Name: liqo-nonce"), reason: mal, says: `unknown field "metadata.Name"`},
		{name: "a nonce.yaml with a duplicate key", kind: nonceYAML, input: edit(nonce, "type: Opaque", "type: Opaque\ntype: kubernetes.io/tls"), reason: mal, says: "already set"},
		{name: "a nonce.yaml with an alias bomb", kind: nonceYAML, input: []byte(bomb.String()), reason: mal, says: "excessive aliasing"},
		{name: "a nonce.yaml with invalid UTF-8", kind: nonceYAML, input: edit(nonce, "name: liqo-nonce", "name: liqo-\xff\xfe"), reason: mal, says: "invalid"},
		{name: "a nonce.yaml with a tab-indented line", kind: nonceYAML, input: edit(nonce, "  name: liqo-nonce", "\tname: liqo-nonce"), reason: mal, says: "yaml"},
		{name: "a nonce.yaml with a second YAML document", kind: nonceYAML, input: append(bytes.Clone(nonce), "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"...), reason: mal, says: "holds 2 YAML documents, want 1"},
		{name: "a nonce.yaml larger than 1 MiB", kind: nonceYAML, input: edit(nonce, "type: Opaque", "type: Opaque\n# "+strings.Repeat("x", 1<<20)), reason: mal, says: "larger than"},

		// nonce.yaml.
		{name: "a nonce Secret with another name", kind: nonceYAML, input: edit(nonce, "name: liqo-nonce", "name: liqo-nonce-2"), field: "metadata.name", reason: mal, says: `want "liqo-nonce"`},
		{name: "a nonce addressed to another tenant namespace", kind: nonceYAML, input: edit(nonce, "namespace: liqo-tenant-alpha", "namespace: liqo-tenant-gamma"), field: "metadata.namespace", reason: mal, says: `want "liqo-tenant-alpha"`},
		{name: "a nonce whose namespace climbs out with ../", kind: nonceYAML, input: edit(nonce, "namespace: liqo-tenant-alpha", "namespace: ../liqo-tenant-alpha"), field: "metadata.namespace", reason: mal, says: `is "../liqo-tenant-alpha"`},
		{name: "a nonce without data.nonce", kind: nonceYAML, input: edit(nonce, "  nonce: ", "  other: "), field: "data.nonce", reason: mal, says: "missing"},
		{name: "a nonce that is not base64", kind: nonceYAML, input: withNonce(strings.Repeat("!", 88)), field: "data.nonce", reason: badNonce, says: "malformed nonce"},
		{name: "a nonce of the wrong length", kind: nonceYAML, input: withNonce(fx.nonce.Value[:44]), field: "data.nonce", reason: badNonce, says: "malformed nonce"},
		{name: "data.nonce that is not base64 in the Secret", kind: nonceYAML, input: edit(nonce, "  nonce: ", "  nonce: '%%%'\n  x: "), reason: mal, says: "illegal base64"},
		{name: "a nonce epoch that is not a number", kind: nonceYAML, input: edit(nonce, `nonce-epoch: "7"`, `nonce-epoch: "seven"`), field: "metadata.annotations", reason: mal, says: `"seven" is not an epoch number`},
		{name: "a nonce expiry that is not RFC 3339", kind: nonceYAML, input: edit(nonce, `"2026-11-22T13:00:00Z"`, `"tomorrow"`), field: "metadata.annotations", reason: mal, says: "not an RFC 3339 time"},

		// tenant.yaml.
		{name: "a Tenant for another cluster ID", kind: tenantYAML, input: edit(tenant, "clusterID: alpha", "clusterID: gamma"), field: "spec.clusterID", reason: mal, says: `is "gamma", want "alpha"`},
		{name: "a Tenant with a status", kind: tenantYAML, input: append(bytes.Clone(tenant), "status:\n  tenantNamespace: liqo-tenant-alpha\n"...), field: "status", reason: mal, says: "carries no status"},
		{name: "a Tenant whose signature does not verify", kind: tenantYAML, input: tenantWith(func(_, _, sig *[]byte) { (*sig)[0] ^= 1 }), field: "spec.signature", reason: reasons.SignatureVerificationFailed, says: "signature mismatch"},
		{name: "a Tenant carrying an RSA key of 1024 bits", kind: tenantYAML, input: tenantWith(func(pub, _, _ *[]byte) { *pub = mustPEM(t, rsa1024.Public()) }), field: "spec.publicKey", reason: reasons.InvalidPublicKey, says: "1024 bits"},
		{name: "a Tenant whose public key is truncated PEM", kind: tenantYAML, input: tenantWith(func(pub, _, _ *[]byte) { *pub = (*pub)[:40] }), field: "spec.publicKey", reason: reasons.InvalidPublicKey, says: "malformed PEM block"},
		{name: "a Tenant carrying another cluster's key", kind: tenantYAML, input: tenantWith(func(pub, _, _ *[]byte) { *pub = mustPEM(t, fx.other.Public()) }), field: "spec.publicKey", reason: reasons.KeyNotPinned, says: "not the key pinned for alpha"},
		{name: "a Tenant whose CSR is for another common name", kind: tenantYAML, input: tenantWith(func(_, c, _ *[]byte) {
			*c = csr(fx.key, pkix.Name{CommonName: "gamma", Organization: []string{"liqo.io"}})
		}), field: "spec.csr", reason: reasons.InvalidCSR, says: `common name is "gamma"`},
		{name: "a Tenant whose CSR asks for system:masters", kind: tenantYAML, input: tenantWith(func(_, c, _ *[]byte) {
			*c = csr(fx.key, pkix.Name{CommonName: consumer, Organization: []string{"system:masters"}})
		}), field: "spec.csr", reason: reasons.InvalidCSR, says: `organization is "system:masters"`},
		{name: "a Tenant whose CSR is for another key", kind: tenantYAML, input: tenantWith(func(_, c, _ *[]byte) { *c = must[[]byte](t)(handshake.ControlPlaneCSR(fx.other, consumer)) }), field: "spec.csr", reason: reasons.InvalidCSR, says: "csr key mismatch"},

		// identity.yaml.
		{name: "an Identity of the ResourceSlice type", kind: identityYAML, input: edit(identity, "type: ControlPlane", "type: ResourceSlice"), field: "spec.type", reason: mal, says: `want "ControlPlane"`},
		{name: "an Identity carrying AWS credentials", kind: identityYAML, input: edit(identity, "authParams:\n", "authParams:\n    awsConfig: {awsAccessKeyID: AKIA, awsSecretAccessKey: x, awsRegion: r, awsClusterName: c, awsUserArn: u}\n"), field: "spec.authParams.awsConfig", reason: mal, says: "never travel through Git"},
		{name: "an Identity pointing at another API server", kind: identityYAML, input: edit(identity, "https://beta.example:6443", "https://mallory.example:6443"), field: "spec.authParams.apiServer", reason: reasons.UntrustedAPIServer, says: "beta publishes"},
		{name: "an Identity with a CA beta never published", kind: identityYAML, input: encode(t, withCA(fx, fx.otherCA.CertPEM)), field: "spec.authParams.ca", reason: reasons.UntrustedCA, says: "not the CA published in clusters/beta/cluster.yaml"},
		{name: "an Identity with an expired certificate", kind: identityYAML, input: identityWithCert(expired), field: "spec.authParams.signedCRT", reason: reasons.InvalidCertificate, says: "expired"},
		{name: "an Identity whose certificate is a CSR", kind: identityYAML, input: identityWithCert(fx.tenant.Spec.CSR), field: "spec.authParams.signedCRT", reason: reasons.InvalidCertificate, says: `PEM type "CERTIFICATE REQUEST"`},

		// resourceslice-<name>.yaml.
		{name: "a slice request with an unknown spec field", kind: requestYAML, input: edit(request, "spec:\n", "spec:\n  replicas: 3\n"), reason: mal, says: `unknown field "spec.replicas"`},
		{name: "a slice request of another kind", kind: requestYAML, input: edit(request, "kind: ResourceSlice", "kind: Tenant"), field: "kind", reason: mal, says: `want "ResourceSlice"`},
	}
}

// check runs the case's input through the check the reconciler uses.
func (c badArtifact) check(fx *fixture) (string, error) {
	switch c.kind {
	case nonceYAML:
		_, err := artifact.ParseNonce(nonceFile, c.input, consumer)
		return nonceFile, err
	case tenantYAML:
		_, err := artifact.VerifyTenant(tenantFile, c.input, fx.tenantCheck())
		return tenantFile, err
	case identityYAML:
		_, err := artifact.VerifyIdentity(identityFile, c.input, fx.identityCheck())
		return identityFile, err
	default:
		_, err := artifact.VerifySliceRequest(requestFile, c.input, slice, consumer, provider, fx.keyDER)
		return requestFile, err
	}
}

// TestBadInputArtifacts: every malformed artifact is refused with an
// *artifact.Error on its file and field, with the condition reason the
// reconciler reports, and a message saying why.
func TestBadInputArtifacts(t *testing.T) {
	fx := newFixture(t)
	for _, c := range badArtifacts(t, fx) {
		t.Run(c.name, func(t *testing.T) {
			file, err := c.check(fx)
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
			wantRefusal(t, err, file, c.field, c.reason)
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("message %q does not say %q", err, c.says)
			}
		})
	}
}

// seedBadArtifacts adds the cases of one kind to a fuzz target's corpus.
func seedBadArtifacts(f *testing.F, fx *fixture, kind artifactKind) {
	for _, c := range badArtifacts(f, fx) {
		if c.kind == kind {
			f.Add(c.input)
		}
	}
}

// mustRSA1024 is an RSA key too short for the handshake.
func mustRSA1024(t testing.TB) crypto.Signer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// mustPEM encodes any public key as PEM PKIX, even one the handshake refuses.
func mustPEM(t testing.TB, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// withCA is fx's Identity with another CA bundle.
func withCA(fx *fixture, caPEM []byte) any {
	id := fx.identity.DeepCopy()
	id.Spec.AuthParams.CA = caPEM
	return id
}
