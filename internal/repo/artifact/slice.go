package artifact

import (
	"errors"
	"reflect"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// SliceFile is the inbox file name of a slice request and of its answer:
// "resourceslice-<name>.yaml".
func SliceFile(name string) string { return "resourceslice-" + name + ".yaml" }

// SliceAnswerFile is the inbox file name of a provider's answer to a slice
// request: "resourceslice-<name>.status.yaml". Slice names are DNS-1123
// labels, without dots, so it never collides with a request when two
// clusters peer both ways.
func SliceAnswerFile(name string) string { return "resourceslice-" + name + ".status.yaml" }

// SliceName returns the slice name of a request's inbox file name, or false
// (answers and other files included).
func SliceName(file string) (string, bool) {
	if !strings.HasPrefix(file, "resourceslice-") || !strings.HasSuffix(file, ".yaml") {
		return "", false
	}
	name := strings.TrimSuffix(strings.TrimPrefix(file, "resourceslice-"), ".yaml")
	return name, name != "" && !strings.Contains(name, ".")
}

// SliceAnswerName returns the slice name of an answer's inbox file name
// (SliceAnswerFile), or false.
func SliceAnswerName(file string) (string, bool) {
	base, ok := strings.CutSuffix(file, ".status.yaml")
	if !ok {
		return "", false
	}
	return SliceName(base + ".yaml")
}

// DecodeSlice parses a ResourceSlice file without checking it.
func DecodeSlice(file string, data []byte) (*authv1beta1.ResourceSlice, error) {
	if err := tooLarge(file, data); err != nil {
		return nil, err
	}
	rs, err := liqo.DecodeResourceSlice(data)
	if err != nil {
		return nil, decodeErr(file, err)
	}
	return rs, nil
}

// ErrStaleAnswer means a provider's answer is for another version of the
// request (the consumer changed the slice since): wait for a new decision.
var ErrStaleAnswer = errors.New("answer is for another version of the request")

// VerifySliceRequest checks a consumer's slice request in the provider's
// inbox: it is a ResourceSlice named after its file, in the consumer's tenant
// namespace for the provider, for this consumer and provider, with no status,
// and its CSR is Liqo's slice CSR (CN = <slice>-<first 12 hex of
// sha256(consumer ID)>, O = consumer ID) for the Tenant's key.
func VerifySliceRequest(file string, data []byte, name, consumerID, providerID string, tenantKeyDER []byte) (*authv1beta1.ResourceSlice, error) {
	return VerifySliceRequestCached(file, data, name, consumerID, providerID, tenantKeyDER, nil)
}

// VerifySliceRequestCached is VerifySliceRequest with its CSR check
// answered from cache when the same CSR passed it for the same key, slice
// and consumer before (handshake.VerifyCache); a nil cache checks every
// time.
func VerifySliceRequestCached(file string, data []byte, name, consumerID, providerID string, tenantKeyDER []byte, cache *handshake.VerifyCache) (*authv1beta1.ResourceSlice, error) {
	if err := tooLarge(file, data); err != nil {
		return nil, err
	}
	rs, err := liqo.DecodeResourceSlice(data)
	if err != nil {
		return nil, decodeErr(file, err)
	}
	switch {
	case rs.Name != name:
		return nil, refuse(file, "metadata.name", reasons.MalformedArtifact, "is %q, want %q (the file name)", rs.Name, name)
	case rs.Namespace != liqo.TenantNamespace(providerID):
		return nil, refuse(file, "metadata.namespace", reasons.MalformedArtifact, "is %q, want %q", rs.Namespace, liqo.TenantNamespace(providerID))
	case rs.Spec.ConsumerClusterID == nil || string(*rs.Spec.ConsumerClusterID) != consumerID:
		return nil, refuse(file, "spec.consumerClusterID", reasons.MalformedArtifact, "want %q", consumerID)
	case rs.Spec.ProviderClusterID == nil || string(*rs.Spec.ProviderClusterID) != providerID:
		return nil, refuse(file, "spec.providerClusterID", reasons.MalformedArtifact, "want %q", providerID)
	case !reflect.DeepEqual(rs.Status, authv1beta1.ResourceSliceStatus{}):
		return nil, refuse(file, "status", reasons.MalformedArtifact, "a request carries no status")
	}
	if err := cache.CheckResourceSliceCSR(rs.Spec.CSR, tenantKeyDER, name, consumerID); err != nil {
		return nil, refuse(file, "spec.csr", reasons.InvalidCSR, "%v", err)
	}
	return rs, nil
}

// SliceAnswer is a provider's decision on a slice, read back by the consumer.
type SliceAnswer struct {
	Slice    *authv1beta1.ResourceSlice
	Accepted bool   // both Authentication and Resources accepted
	Reason   string // of the first Denied condition, else of Resources
	Message  string
}

// VerifySliceAnswer checks a provider's answer to request: same name and
// spec (else ErrStaleAnswer), both conditions present; when accepted, the
// authParams carry the provider's published API server and CA and a
// certificate for the consumer's key with the slice's CN and O = consumer ID.
func VerifySliceAnswer(file string, data []byte, request *authv1beta1.ResourceSlice, c IdentityCheck) (*SliceAnswer, error) {
	if err := tooLarge(file, data); err != nil {
		return nil, err
	}
	rs, err := liqo.DecodeResourceSlice(data)
	if err != nil {
		return nil, decodeErr(file, err)
	}
	if rs.Name != request.Name || rs.Namespace != request.Namespace {
		return nil, refuse(file, "metadata", reasons.MalformedArtifact, "answers %s/%s, want %s/%s", rs.Namespace, rs.Name, request.Namespace, request.Name)
	}
	if !reflect.DeepEqual(rs.Spec, request.Spec) {
		return nil, &Error{File: file, Field: "spec", Reason: "Pending", Err: ErrStaleAnswer}
	}
	ans := &SliceAnswer{Slice: rs, Accepted: true}
	for _, t := range []authv1beta1.ResourceSliceConditionType{authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionTypeResources} {
		cond := SliceCondition(rs, t)
		if cond == nil {
			return nil, refuse(file, "status.conditions", reasons.MalformedArtifact, "no %s condition", t)
		}
		if cond.Status != authv1beta1.ResourceSliceConditionAccepted {
			if ans.Accepted {
				ans.Reason, ans.Message = cond.Reason, cond.Message
			}
			ans.Accepted = false
		} else if ans.Accepted {
			ans.Reason, ans.Message = cond.Reason, cond.Message
		}
	}
	if !ans.Accepted {
		return ans, nil
	}
	p := rs.Status.AuthParams
	if p == nil {
		return nil, refuse(file, "status.authParams", reasons.MalformedArtifact, "accepted without authParams")
	}
	if p.AwsConfig != nil {
		return nil, refuse(file, "status.authParams.awsConfig", reasons.MalformedArtifact, "AWS credentials never travel through Git")
	}
	if p.APIServer != c.Provider.APIServer {
		return nil, refuse(file, "status.authParams.apiServer", reasons.UntrustedAPIServer, "is %q, but %s publishes %q", p.APIServer, c.Provider.ClusterID, c.Provider.APIServer)
	}
	if !SameCertificates(p.CA, []byte(c.Provider.CA)) {
		return nil, refuse(file, "status.authParams.ca", reasons.UntrustedCA, "is not the CA published in %s", layout.ClusterPath(c.Provider.ClusterID, layout.ClusterFile))
	}
	cn := handshake.ResourceSliceCommonName(rs.Name, c.ConsumerID)
	if err := c.Cache.VerifyClientCertificate(p.SignedCRT, []byte(c.Provider.CA), c.ConsumerKeyDER, cn, c.ConsumerID, c.Now); err != nil {
		return nil, refuse(file, "status.authParams.signedCRT", reasons.InvalidCertificate, "%v", err)
	}
	return ans, nil
}

// SliceAccepted reports whether a slice answer accepts the slice: both its
// Authentication and its Resources conditions are Accepted, as Liqo's
// remote ResourceSlice controller sets them on a grant.
func SliceAccepted(rs *authv1beta1.ResourceSlice) bool {
	for _, t := range []authv1beta1.ResourceSliceConditionType{authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionTypeResources} {
		c := SliceCondition(rs, t)
		if c == nil || c.Status != authv1beta1.ResourceSliceConditionAccepted {
			return false
		}
	}
	return true
}

// SliceCondition returns the condition of type t of a slice, or nil.
func SliceCondition(rs *authv1beta1.ResourceSlice, t authv1beta1.ResourceSliceConditionType) *authv1beta1.ResourceSliceCondition {
	for i := range rs.Status.Conditions {
		if rs.Status.Conditions[i].Type == t {
			return &rs.Status.Conditions[i]
		}
	}
	return nil
}
