package reconcile

import (
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/liqo/render"
)

// StepKind is what a handshake step does: the verb of its text.
type StepKind int

// The kinds of step a change carries, in no particular order (Diff orders
// the steps themselves).
const (
	_ StepKind = iota
	// Writes into the cluster's own tree, not under liqo/.
	PublishOpenPGPKey    // clusters/<self>/openpgp key, first written or changed
	RepublishClusterFile // cluster.yaml written again over an edit its cluster did not sign
	PublishRolledKey     // cluster.yaml changed: the rolled-over key
	UpdateFluxKeys       // clusters/<self>/flux/'s Secret changed
	// Artifacts written into a peer's inbox.
	SendNonce
	SendTenant
	RenewIdentity // an Identity replacing one the inbox held
	IssueIdentity
	AnswerSlice  // a provider's answer to a ResourceSlice request
	RequestSlice // a consumer's ResourceSlice request
	// Liqo objects rendered under clusters/<self>/liqo/ (render.Object).
	AcceptSlice
	AcceptIdentity
	UpdateTenant // a Tenant replacing one rendered before
	AcceptTenant
	RenderClusterRoles
	AdmitSlices // the admission policy alone, none of its slices or Tenant changing
	// Deletions and the rest.
	RemoveFromInbox // a file not an artifact in the cluster's folder of a peer's inbox
	Withdraw        // an artifact deleted from a peer's inbox
	RemoveObjects   // a peering's rendered objects deleted
	Remove          // any other file deleted
	SignWithdrawal  // a tombstone signed again, with no withdrawal beside it
	UpdateStatus    // a change that is no step above: status, kustomization, manifests
)

// Step is one thing a change does in the handshake, as a value; String
// renders it in the handshake's words, the text of the commit subject and
// of its Gitpeer-Step trailer (internal/git/trailer), which tools and
// tests read back, so a step's text never changes.
type Step struct {
	Kind StepKind
	// Peer is the cluster the step concerns: the inbox's owner it sends to
	// or withdraws from, the peer whose objects are rendered, or, for the
	// steps about the cluster's own files (RepublishClusterFile,
	// UpdateFluxKeys), the cluster itself. "" when the text names none.
	Peer string
	// Name is the slice (AnswerSlice, RequestSlice, AcceptSlice), the
	// artifact withdrawn without ".yaml" (Withdraw), or the path removed,
	// relative to the cluster's folder or tree when there is one
	// (RemoveFromInbox, Remove).
	Name string
}

// String is the step in the handshake's words, e.g. "send nonce to alpha".
func (s Step) String() string {
	switch s.Kind {
	case PublishOpenPGPKey:
		return "publish OpenPGP key"
	case RepublishClusterFile:
		return "republish " + s.Peer + "'s cluster.yaml over an edit it did not sign"
	case PublishRolledKey:
		return "publish the rolled-over cluster key"
	case UpdateFluxKeys:
		return "update the keys Flux verifies " + s.Peer + "'s commits with"
	case SendNonce:
		return "send nonce to " + s.Peer
	case SendTenant:
		return "send tenant to " + s.Peer
	case RenewIdentity:
		return "renew identity of " + s.Peer
	case IssueIdentity:
		return "issue identity to " + s.Peer
	case AnswerSlice:
		return fmt.Sprintf("answer slice %s of %s", s.Name, s.Peer)
	case RequestSlice:
		return fmt.Sprintf("request slice %s from %s", s.Name, s.Peer)
	case AcceptSlice:
		return fmt.Sprintf("accept slice %s of %s", s.Name, s.Peer)
	case AcceptIdentity:
		return "accept identity of " + s.Peer
	case UpdateTenant:
		return "update tenant of " + s.Peer
	case AcceptTenant:
		return "accept tenant of " + s.Peer
	case RenderClusterRoles:
		return "render Liqo cluster roles"
	case AdmitSlices:
		return "admit the granted slices of " + s.Peer
	case RemoveFromInbox:
		return fmt.Sprintf("remove %s from the inbox of %s", s.Name, s.Peer)
	case Withdraw:
		return fmt.Sprintf("withdraw %s from %s", s.Name, s.Peer)
	case RemoveObjects:
		return "remove objects for " + s.Peer
	case Remove:
		return "remove " + s.Name
	case SignWithdrawal:
		return "sign withdrawal for " + s.Peer
	case UpdateStatus:
		return "update status"
	}
	return fmt.Sprintf("step of unknown kind %d", int(s.Kind))
}

// StepTexts is each step's String, in order: the steps as a commit, a log
// line or a command's output names them.
func StepTexts(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.String()
	}
	return out
}

// objectStep is the step writing a rendered Liqo object makes; existed
// tells that a former version is replaced. None (false) for the objects
// that go with another's step: a Tenant's namespace and bindings, its
// nonce Secret, and the admission policy, which steps names itself.
func objectStep(o render.Object, existed bool) (Step, bool) {
	switch {
	case o.Slice != "":
		// A changed grant rewrites the slice while its Identity may stay.
		return Step{Kind: AcceptSlice, Peer: o.Peer, Name: o.Slice}, true
	case o.Kind == authv1beta1.IdentityKind:
		return Step{Kind: AcceptIdentity, Peer: o.Peer}, true
	case o.Kind == authv1beta1.TenantKind && existed:
		return Step{Kind: UpdateTenant, Peer: o.Peer}, true
	case o.Kind == authv1beta1.TenantKind:
		return Step{Kind: AcceptTenant, Peer: o.Peer}, true
	case o.Kind == render.KindClusterRole:
		return Step{Kind: RenderClusterRoles}, true
	}
	return Step{}, false
}
