package artifact_test

import (
	"bytes"
	"crypto/x509/pkix"
	"errors"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqocore "github.com/liqotech/liqo/apis/core/v1beta1"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
)

func TestSliceFileNames(t *testing.T) {
	if got := artifact.SliceFile("web"); got != "resourceslice-web.yaml" {
		t.Errorf("SliceFile = %q", got)
	}
	if got := artifact.SliceAnswerFile("web"); got != "resourceslice-web.status.yaml" {
		t.Errorf("SliceAnswerFile = %q", got)
	}
	cases := []struct {
		file string
		name string
		ok   bool
	}{
		{"resourceslice-web.yaml", "web", true},
		{"resourceslice-gpu-1.yaml", "gpu-1", true},
		{"resourceslice-web.status.yaml", "", false},
		{"resourceslice-.yaml", "", false},
		{"tenant.yaml", "", false},
		{"resourceslice-web.yml", "", false},
	}
	for _, tc := range cases {
		name, ok := artifact.SliceName(tc.file)
		if ok != tc.ok || (ok && name != tc.name) {
			t.Errorf("SliceName(%q) = %q, %t; want %q, %t", tc.file, name, ok, tc.name, tc.ok)
		}
	}
}

func TestVerifySliceRequest(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(t *testing.T, f *fixture, rs *authv1beta1.ResourceSlice, keyDER *[]byte)
		field  string
		reason string
	}{
		{name: "accepts the consumer's request"},
		{name: "refuses a CSR whose CN hashes another consumer", edit: func(t *testing.T, f *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			rs.Spec.CSR = rawCSR(t, f.key, pkix.Name{CommonName: handshake.ResourceSliceCommonName(slice, "gamma"), Organization: []string{consumer}})
		}, field: "spec.csr", reason: reasons.InvalidCSR},
		{name: "refuses a CSR for another slice", edit: func(t *testing.T, f *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			rs.Spec.CSR, _ = handshake.ResourceSliceCSR(f.key, "db", consumer)
		}, field: "spec.csr", reason: reasons.InvalidCSR},
		{name: "refuses a CSR whose organization is not the consumer", edit: func(t *testing.T, f *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			rs.Spec.CSR = rawCSR(t, f.key, pkix.Name{CommonName: handshake.ResourceSliceCommonName(slice, consumer), Organization: []string{"system:masters"}})
		}, field: "spec.csr", reason: reasons.InvalidCSR},
		{name: "refuses a control-plane CSR", edit: func(t *testing.T, f *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			rs.Spec.CSR, _ = handshake.ControlPlaneCSR(f.key, consumer)
		}, field: "spec.csr", reason: reasons.InvalidCSR},
		{name: "refuses a CSR for another cluster's key", edit: func(t *testing.T, f *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			rs.Spec.CSR, _ = handshake.ResourceSliceCSR(f.other, slice, consumer)
		}, field: "spec.csr", reason: reasons.InvalidCSR},
		{name: "refuses any CSR when the Tenant's key is unknown", edit: func(_ *testing.T, _ *fixture, _ *authv1beta1.ResourceSlice, keyDER *[]byte) {
			*keyDER = nil
		}, field: "spec.csr", reason: reasons.InvalidCSR},
		{name: "refuses a request without a CSR", edit: func(_ *testing.T, _ *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			rs.Spec.CSR = nil
		}, field: "spec.csr", reason: reasons.InvalidCSR},
		{name: "refuses a request that carries a status", edit: func(_ *testing.T, f *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			rs.Status = *f.answer.Status.DeepCopy()
		}, field: "status", reason: reasons.MalformedArtifact},
		{name: "refuses a request not named after its file", edit: func(_ *testing.T, _ *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			rs.Name = "db"
		}, field: "metadata.name", reason: reasons.MalformedArtifact},
		{name: "refuses a request outside the provider's tenant namespace", edit: func(_ *testing.T, _ *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			rs.Namespace = liqo.TenantNamespace(consumer)
		}, field: "metadata.namespace", reason: reasons.MalformedArtifact},
		{name: "refuses a request from another consumer", edit: func(_ *testing.T, _ *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			id := liqocore.ClusterID("gamma")
			rs.Spec.ConsumerClusterID = &id
		}, field: "spec.consumerClusterID", reason: reasons.MalformedArtifact},
		{name: "refuses a request without a consumer", edit: func(_ *testing.T, _ *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			rs.Spec.ConsumerClusterID = nil
		}, field: "spec.consumerClusterID", reason: reasons.MalformedArtifact},
		{name: "refuses a request to another provider", edit: func(_ *testing.T, _ *fixture, rs *authv1beta1.ResourceSlice, _ *[]byte) {
			id := liqocore.ClusterID("gamma")
			rs.Spec.ProviderClusterID = &id
		}, field: "spec.providerClusterID", reason: reasons.MalformedArtifact},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rs := f.request.DeepCopy()
			keyDER := f.keyDER
			if tc.edit != nil {
				tc.edit(t, f, rs, &keyDER)
			}
			got, err := artifact.VerifySliceRequest(requestFile, encode(t, rs), slice, consumer, provider, keyDER)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got.Name != slice || !bytes.Equal(got.Spec.CSR, f.request.Spec.CSR) {
					t.Errorf("returned %+v", got)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			wantRefusal(t, err, requestFile, tc.field, tc.reason)
		})
	}
	t.Run("refuses a file that is not a ResourceSlice", func(t *testing.T) {
		f := newFixture(t)
		_, err := artifact.VerifySliceRequest(requestFile, encode(t, f.tenant), slice, consumer, provider, f.keyDER)
		wantRefusal(t, err, requestFile, "kind", reasons.MalformedArtifact)
	})
}

func TestVerifySliceAnswer(t *testing.T) {
	cases := []struct {
		name     string
		edit     func(t *testing.T, f *fixture, ans *authv1beta1.ResourceSlice, c *artifact.IdentityCheck)
		accepted bool
		reason   string // the answer's reason, or the refusal's
		field    string // the refusal's field; "" with an answer
		stale    bool
	}{
		{name: "accepts an accepted answer with the provider's certificate", accepted: true, reason: liqo.ReasonSliceResourcesAccepted},
		{name: "reports a denial of resources with its reason", edit: func(_ *testing.T, _ *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Status.Conditions[1].Status = authv1beta1.ResourceSliceConditionDenied
			ans.Status.Conditions[1].Reason = liqo.ReasonSliceResourcesDenied
			ans.Status.AuthParams = nil
		}, reason: liqo.ReasonSliceResourcesDenied},
		{name: "reports the first denial when both are denied", edit: func(_ *testing.T, _ *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			for i := range ans.Status.Conditions {
				ans.Status.Conditions[i].Status = authv1beta1.ResourceSliceConditionDenied
			}
			ans.Status.Conditions[0].Reason = liqo.ReasonSliceAuthDenied
			ans.Status.Conditions[1].Reason = liqo.ReasonSliceResourcesDenied
		}, reason: liqo.ReasonSliceAuthDenied},
		{name: "says an answer to an older spec is stale", edit: func(_ *testing.T, _ *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Spec.Class = "gpu"
		}, stale: true},
		{name: "says an answer to an older CSR is stale", edit: func(_ *testing.T, f *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Spec.CSR, _ = handshake.ResourceSliceCSR(f.other, slice, consumer)
		}, stale: true},
		{name: "refuses an answer to another slice", edit: func(_ *testing.T, _ *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Name = "db"
		}, field: "metadata", reason: reasons.MalformedArtifact},
		{name: "refuses an answer without a Resources condition", edit: func(_ *testing.T, _ *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Status.Conditions = ans.Status.Conditions[:1]
		}, field: "status.conditions", reason: reasons.MalformedArtifact},
		{name: "refuses an answer without conditions", edit: func(_ *testing.T, _ *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Status.Conditions = nil
		}, field: "status.conditions", reason: reasons.MalformedArtifact},
		{name: "refuses an acceptance without authParams", edit: func(_ *testing.T, _ *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Status.AuthParams = nil
		}, field: "status.authParams", reason: reasons.MalformedArtifact},
		{name: "refuses AWS credentials", edit: func(_ *testing.T, _ *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Status.AuthParams.AwsConfig = &authv1beta1.AwsConfig{AwsRegion: "eu-west-1"}
		}, field: "status.authParams.awsConfig", reason: reasons.MalformedArtifact},
		{name: "refuses another API server", edit: func(_ *testing.T, _ *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Status.AuthParams.APIServer = "https://evil.example:6443"
		}, field: "status.authParams.apiServer", reason: reasons.UntrustedAPIServer},
		{name: "refuses a CA that is not the provider's", edit: func(t *testing.T, f *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Status.AuthParams.CA = f.otherCA.CertPEM
			ans.Status.AuthParams.SignedCRT, _ = f.otherCA.SignCSR(f.request.Spec.CSR, now, time.Hour)
		}, field: "status.authParams.ca", reason: reasons.UntrustedCA},
		{name: "refuses a certificate signed by another CA", edit: func(t *testing.T, f *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Status.AuthParams.SignedCRT, _ = f.otherCA.SignCSR(f.request.Spec.CSR, now, time.Hour)
		}, field: "status.authParams.signedCRT", reason: reasons.InvalidCertificate},
		{name: "refuses a certificate for the control-plane CN", edit: func(_ *testing.T, f *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			ans.Status.AuthParams.SignedCRT = f.identity.Spec.AuthParams.SignedCRT
		}, field: "status.authParams.signedCRT", reason: reasons.InvalidCertificate},
		{name: "refuses a certificate for another slice's CN", edit: func(_ *testing.T, f *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			csr, _ := handshake.ResourceSliceCSR(f.key, "db", consumer)
			ans.Status.AuthParams.SignedCRT, _ = f.ca.SignCSR(csr, now, time.Hour)
		}, field: "status.authParams.signedCRT", reason: reasons.InvalidCertificate},
		{name: "refuses a certificate for another key", edit: func(_ *testing.T, f *fixture, ans *authv1beta1.ResourceSlice, _ *artifact.IdentityCheck) {
			csr, _ := handshake.ResourceSliceCSR(f.other, slice, consumer)
			ans.Status.AuthParams.SignedCRT, _ = f.ca.SignCSR(csr, now, time.Hour)
		}, field: "status.authParams.signedCRT", reason: reasons.InvalidCertificate},
		{name: "refuses a certificate expired at Now", edit: func(_ *testing.T, _ *fixture, _ *authv1beta1.ResourceSlice, c *artifact.IdentityCheck) {
			c.Now = now.Add(48 * time.Hour)
		}, field: "status.authParams.signedCRT", reason: reasons.InvalidCertificate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ans := f.answer.DeepCopy()
			c := f.identityCheck()
			if tc.edit != nil {
				tc.edit(t, f, ans, &c)
			}
			got, err := artifact.VerifySliceAnswer(answerFile, encode(t, ans), f.request, c)
			switch {
			case tc.stale:
				if !errors.Is(err, artifact.ErrStaleAnswer) {
					t.Fatalf("got %+v, %v; want ErrStaleAnswer", got, err)
				}
				wantRefusal(t, err, answerFile, "spec", "Pending")
			case tc.field != "":
				if err == nil {
					t.Fatalf("accepted %+v", got)
				}
				if errors.Is(err, artifact.ErrStaleAnswer) {
					t.Fatal("a refusal reads as a stale answer")
				}
				wantRefusal(t, err, answerFile, tc.field, tc.reason)
			default:
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got.Accepted != tc.accepted || got.Reason != tc.reason {
					t.Errorf("answer accepted=%t reason=%q, want %t %q", got.Accepted, got.Reason, tc.accepted, tc.reason)
				}
				if got.Slice == nil || got.Slice.Name != slice {
					t.Errorf("answer slice %+v", got.Slice)
				}
			}
		})
	}
}

func TestSliceConditionFindsByType(t *testing.T) {
	f := newFixture(t)
	if c := artifact.SliceCondition(f.answer, authv1beta1.ResourceSliceConditionTypeResources); c == nil || c.Message != "2 cpu" {
		t.Errorf("Resources condition %+v", c)
	}
	if c := artifact.SliceCondition(f.request, authv1beta1.ResourceSliceConditionTypeResources); c != nil {
		t.Errorf("a request has condition %+v", c)
	}
}

func TestSliceFileNamesRoundTrip(t *testing.T) {
	for _, name := range []string{"web", "gpu-pool", "a"} {
		if got, ok := artifact.SliceName(artifact.SliceFile(name)); !ok || got != name {
			t.Errorf("SliceName(SliceFile(%q)) = %q, %t", name, got, ok)
		}
		if got, ok := artifact.SliceAnswerName(artifact.SliceAnswerFile(name)); !ok || got != name {
			t.Errorf("SliceAnswerName(SliceAnswerFile(%q)) = %q, %t", name, got, ok)
		}
		if _, ok := artifact.SliceName(artifact.SliceAnswerFile(name)); ok {
			t.Errorf("an answer file %q reads as a request", artifact.SliceAnswerFile(name))
		}
		if _, ok := artifact.SliceAnswerName(artifact.SliceFile(name)); ok {
			t.Errorf("a request file %q reads as an answer", artifact.SliceFile(name))
		}
	}
	for _, f := range []string{"nonce.yaml", "resourceslice-.status.yaml", "resourceslice-a.b.status.yaml", "identity.yaml"} {
		if _, ok := artifact.SliceAnswerName(f); ok {
			t.Errorf("%q reads as an answer", f)
		}
	}
}
