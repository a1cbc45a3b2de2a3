package artifact_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
)

// The fuzz targets feed inbox artifacts a hostile peer could commit. Each is
// seeded with valid artifacts generated at start (never stored key
// material) and near misses. A check must never panic, must refuse with an
// *artifact.Error naming the file, and whatever it accepts must hold the
// invariants its doc comment promises, re-checked here with package
// handshake directly.

func wantArtifactError(t *testing.T, err error, file string) {
	t.Helper()
	var ae *artifact.Error
	if !errors.As(err, &ae) || ae.File != file || ae.Reason == "" {
		t.Fatalf("error %T %v is not an *artifact.Error on %s with a reason", err, err, file)
	}
}

func seedVariants(f *testing.F, valid []byte, variants ...[]byte) {
	f.Add(valid)
	for _, v := range variants {
		f.Add(v)
	}
	f.Add(bytes.Replace(valid, []byte("alpha"), []byte("gamma"), -1))
	f.Add(append(append([]byte(nil), valid...), "status: {}\n"...))
	f.Add([]byte{})
	f.Add([]byte("{"))
}

func FuzzParseNonce(f *testing.F) {
	fx := newFixture(f)
	valid := encode(f, artifact.NonceSecret(consumer, fx.nonce))
	seedVariants(f, valid,
		bytes.Replace(valid, []byte(`"7"`), []byte(`"-7"`), 1),
		bytes.Replace(valid, []byte("nonce-expires"), []byte("nonce-expired"), 1),
		[]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: liqo-nonce, namespace: liqo-tenant-alpha, labels: {liqo.io/nonce: \"true\", liqo.io/remote-cluster-id: alpha}, annotations: {gitpeer.io/nonce-epoch: \"1\"}}\nstringData: {nonce: x}\n"),
	)
	seedBadArtifacts(f, fx, nonceYAML)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := artifact.ParseNonce(nonceFile, data, consumer)
		if err != nil {
			wantArtifactError(t, err, nonceFile)
			return
		}
		if err := handshake.CheckNonce(n.Value); err != nil {
			t.Fatalf("accepted a nonce of the wrong shape: %v", err)
		}
		s, _, err := liqo.DecodeNonceSecret(data)
		if err != nil || s.Namespace != liqo.TenantNamespace(consumer) || s.Labels[liqo.LabelRemoteClusterID] != consumer || s.Labels[liqo.LabelNonce] != "true" {
			t.Fatalf("accepted a nonce secret not addressed to %s: %+v, %v", consumer, s, err)
		}
	})
}

func FuzzVerifyTenant(f *testing.F) {
	fx := newFixture(f)
	valid := encode(f, fx.tenant)
	bad := fx.tenant.DeepCopy()
	bad.Spec.Signature = append([]byte(nil), bad.Spec.Signature...)
	bad.Spec.Signature[0] ^= 1
	seedVariants(f, valid, encode(f, bad))
	seedBadArtifacts(f, fx, tenantYAML)
	check := fx.tenantCheck()
	f.Fuzz(func(t *testing.T, data []byte) {
		tn, err := artifact.VerifyTenant(tenantFile, data, check)
		if err != nil {
			wantArtifactError(t, err, tenantFile)
			return
		}
		if tn.Name != consumer || tn.Namespace != liqo.TenantNamespace(consumer) ||
			tn.Labels[liqo.LabelRemoteClusterID] != consumer || string(tn.Spec.ClusterID) != consumer {
			t.Fatalf("accepted a Tenant that is not %s's: %+v", consumer, tn.ObjectMeta)
		}
		if tn.Spec.AuthzPolicy != nil && *tn.Spec.AuthzPolicy != authv1beta1.KeysExchange {
			t.Fatalf("accepted policy %s", *tn.Spec.AuthzPolicy)
		}
		if tn.Status.AuthParams != nil || tn.Status.TenantNamespace != "" {
			t.Fatal("accepted a Tenant with a status")
		}
		pub, der, err := handshake.ParsePublicKey(tn.Spec.PublicKey)
		if err != nil || !bytes.Equal(der, fx.keyDER) {
			t.Fatalf("accepted a key that is not the pinned one: %v", err)
		}
		if err := handshake.VerifyNonce(pub, fx.nonce.Value, tn.Spec.Signature); err != nil {
			t.Fatalf("accepted a signature that does not verify: %v", err)
		}
		if err := handshake.CheckControlPlaneCSR(tn.Spec.CSR, der, consumer); err != nil {
			t.Fatalf("accepted a CSR Liqo would refuse: %v", err)
		}
	})
}

func FuzzVerifyIdentity(f *testing.F) {
	fx := newFixture(f)
	valid := encode(f, fx.identity)
	other := fx.identity.DeepCopy()
	other.Spec.AuthParams.CA = fx.otherCA.CertPEM
	seedVariants(f, valid, encode(f, other))
	seedBadArtifacts(f, fx, identityYAML)
	check := fx.identityCheck()
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := artifact.VerifyIdentity(identityFile, data, check)
		if err != nil {
			wantArtifactError(t, err, identityFile)
			return
		}
		p := id.Spec.AuthParams
		switch {
		case id.Name != liqo.ControlPlaneIdentityName(provider) || string(id.Spec.ClusterID) != provider:
			t.Fatalf("accepted an Identity of another provider: %+v", id.ObjectMeta)
		case id.Spec.Type != authv1beta1.ControlPlaneIdentityType:
			t.Fatalf("accepted type %s", id.Spec.Type)
		case id.Spec.Namespace == nil || *id.Spec.Namespace != liqo.TenantNamespace(consumer):
			t.Fatal("accepted another tenant namespace")
		case p.AwsConfig != nil:
			t.Fatal("accepted AWS credentials")
		case p.APIServer != fx.info.APIServer:
			t.Fatalf("accepted API server %q", p.APIServer)
		case !artifact.SameCertificates(p.CA, []byte(fx.info.CA)):
			t.Fatal("accepted a CA that is not the published one")
		}
		if err := handshake.VerifyClientCertificate(p.SignedCRT, []byte(fx.info.CA), fx.keyDER, consumer, handshake.ControlPlaneOrganization, now); err != nil {
			t.Fatalf("accepted a certificate that does not verify: %v", err)
		}
	})
}

func FuzzVerifySliceRequest(f *testing.F) {
	fx := newFixture(f)
	valid := encode(f, fx.request)
	seedVariants(f, valid, encode(f, fx.answer))
	seedBadArtifacts(f, fx, requestYAML)
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := artifact.VerifySliceRequest(requestFile, data, slice, consumer, provider, fx.keyDER)
		if err != nil {
			wantArtifactError(t, err, requestFile)
			return
		}
		switch {
		case rs.Name != slice || rs.Namespace != liqo.TenantNamespace(provider):
			t.Fatalf("accepted %s/%s", rs.Namespace, rs.Name)
		case rs.Spec.ConsumerClusterID == nil || string(*rs.Spec.ConsumerClusterID) != consumer:
			t.Fatal("accepted another consumer")
		case rs.Spec.ProviderClusterID == nil || string(*rs.Spec.ProviderClusterID) != provider:
			t.Fatal("accepted another provider")
		case !reflect.DeepEqual(rs.Status, authv1beta1.ResourceSliceStatus{}):
			t.Fatal("accepted a request with a status")
		}
		if err := handshake.CheckResourceSliceCSR(rs.Spec.CSR, fx.keyDER, slice, consumer); err != nil {
			t.Fatalf("accepted a CSR Liqo would refuse: %v", err)
		}
	})
}

func FuzzVerifySliceAnswer(f *testing.F) {
	fx := newFixture(f)
	valid := encode(f, fx.answer)
	denied := fx.answer.DeepCopy()
	denied.Status.Conditions[1].Status = authv1beta1.ResourceSliceConditionDenied
	denied.Status.AuthParams = nil
	seedVariants(f, valid, encode(f, denied), encode(f, fx.request))
	check := fx.identityCheck()
	f.Fuzz(func(t *testing.T, data []byte) {
		ans, err := artifact.VerifySliceAnswer(answerFile, data, fx.request, check)
		if err != nil {
			wantArtifactError(t, err, answerFile)
			return
		}
		rs := ans.Slice
		if rs.Name != fx.request.Name || rs.Namespace != fx.request.Namespace || !reflect.DeepEqual(rs.Spec, fx.request.Spec) {
			t.Fatal("accepted an answer to another request")
		}
		auth := artifact.SliceCondition(rs, authv1beta1.ResourceSliceConditionTypeAuthentication)
		res := artifact.SliceCondition(rs, authv1beta1.ResourceSliceConditionTypeResources)
		if auth == nil || res == nil {
			t.Fatal("answered without both conditions")
		}
		bothAccepted := auth.Status == authv1beta1.ResourceSliceConditionAccepted && res.Status == authv1beta1.ResourceSliceConditionAccepted
		if ans.Accepted != bothAccepted {
			t.Fatalf("Accepted = %t with conditions %s and %s", ans.Accepted, auth.Status, res.Status)
		}
		if !ans.Accepted {
			return
		}
		p := rs.Status.AuthParams
		if p == nil || p.AwsConfig != nil || p.APIServer != fx.info.APIServer || !artifact.SameCertificates(p.CA, []byte(fx.info.CA)) {
			t.Fatalf("accepted authParams %+v", p)
		}
		cn := handshake.ResourceSliceCommonName(slice, consumer)
		if err := handshake.VerifyClientCertificate(p.SignedCRT, []byte(fx.info.CA), fx.keyDER, cn, consumer, now); err != nil {
			t.Fatalf("accepted a certificate that does not verify: %v", err)
		}
	})
}
