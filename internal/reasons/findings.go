package reasons

// Finding reasons: what `gitpeer verify` reports of a repo and its
// history, beside the condition reasons it shares with status.yaml.
// docs/trust.md ("What a reader reports") has a line for each.
const (
	// AttributesRewrite: a .gitattributes rule sets an attribute that
	// makes Git rewrite the spec or a file under clusters/ in a checkout
	// (ident, text, eol, crlf, filter, working-tree-encoding) or in an
	// archive a host serves (export-subst, export-ignore): a CI job, a
	// reviewer's checkout or a GitOps engine that checks out with the git
	// CLI (Argo CD) would read other bytes than those committed and signed.
	AttributesRewrite = "AttributesRewrite"
	// BadCommitSignature: a commit carries an SSH or OpenPGP
	// signature that does not verify with the cluster key it claims.
	BadCommitSignature = "BadCommitSignature"
	// BuildFailed: kustomize, as Flux runs it, cannot build a
	// cluster's tree; the message is kustomize's.
	BuildFailed = "BuildFailed"
	// CheckpointNotAncestor: the commit of verify's checkpoint (a
	// commit a previous run found green, recorded outside the repo) is
	// not in the history checked: the history was rewritten since.
	CheckpointNotAncestor = "CheckpointNotAncestor"
	// EpochMismatch: a Tenant answers a nonce of another epoch.
	EpochMismatch = "EpochMismatch"
	// FingerprintMismatch: a cluster's published key is not the one the spec pins.
	FingerprintMismatch = "FingerprintMismatch"
	// FluxTrustMismatch: clusters/<id>/flux/, the Secret the cluster's
	// Flux verifies its applied head with, is not what gitpeer renders: it
	// trusts a key other than the one cluster.yaml publishes (and, during a
	// rollover, one staged key), or holds a file gitpeer does not write. Flux
	// would then apply commits of a key nobody reviewed.
	FluxTrustMismatch = "FluxTrustMismatch"
	// GrantBeyondPolicy: an accepted answer the provider's own terms
	// deny: a class it does not offer, a resource over the class's cap, a
	// drained Tenant.
	GrantBeyondPolicy = "GrantBeyondPolicy"
	// GrantNotAccepted: a ResourceSlice (or its Identity) is rendered
	// for a consumer without an accepted answer of the provider granting it
	// as the spec lists it.
	GrantNotAccepted = "GrantNotAccepted"
	// InvalidFile: a repo file (cluster.yaml, kustomization.yaml) does
	// not parse or breaks a rule of its kind.
	InvalidFile = "InvalidFile"
	// InvalidSeal: a cluster's applied branch points at something
	// that is not a seal of that cluster: a commit not signed by its key,
	// with other than one parent, or whose tree holds more than
	// clusters/<id>/ less its inbox (a dot-file, a link, another path).
	InvalidSeal = "InvalidSeal"
	// MissingKustomization: a cluster's tree has no kustomization.yaml,
	// so Flux would apply every YAML file under it, the inbox included.
	MissingKustomization = "MissingKustomization"
	// MissingReference: a kustomization lists a path that does not exist.
	MissingReference = "MissingReference"
	// MisspelledCluster is verify --base's finding for a spec cluster ID
	// with no published cluster.yaml that is close to a published cluster the
	// change no longer declares.
	MisspelledCluster = "MisspelledCluster"
	// NotPeered: an inbox holds artifacts between clusters that do not peer.
	NotPeered = "NotPeered"
	// OpenPGPKeyMismatch: a cluster's openpgp.asc holds another key
	// than the OpenPGP key derived from its cluster.yaml's key: GnuPG and
	// Argo CD importing it would trust commits the cluster did not sign.
	OpenPGPKeyMismatch = "OpenPGPKeyMismatch"
	// OutOfOrder: an artifact exists without the one it answers (a
	// Tenant without a valid nonce, an Identity without a valid Tenant, …).
	OutOfOrder = "OutOfOrder"
	// OutsideLayout: a file is where no cluster writes.
	OutsideLayout = "OutsideLayout"
	// OutsideReference: a kustomization refers to a path outside its
	// cluster's tree or into its inbox.
	OutsideReference = "OutsideReference"
	// OwnershipViolation: a manifest signed for one writer sits in
	// another's directory, or a commit signed by a cluster's key changed a
	// path that cluster may not write.
	OwnershipViolation = "OwnershipViolation"
	// PeeringNotInSpec: a file under clusters/<id>/liqo/<peer>/
	// holds an object of a peering (a binding of the consumer, an active
	// Tenant, a grant, an Identity) that the spec did not hold at the
	// commit that wrote it: only what a revocation renders (the drained
	// Tenant, an admission policy admitting nothing) is written for a
	// peering the spec no longer holds.
	PeeringNotInSpec = "PeeringNotInSpec"
	// PrivateMaterial: a file holds a private key, a kubeconfig client
	// credential or an AWS secret key.
	PrivateMaterial = "PrivateMaterial"
	// RemoteBase: a kustomization refers to a remote base or file (a
	// URL, github.com/…, git::, ssh://, user@host:, ?ref=): Flux would fetch
	// content nobody reviewed in this repo.
	RemoteBase = "RemoteBase"
	// RenderedMismatch: a file under liqo/ differs from the object
	// gitpeer renders for it.
	RenderedMismatch = "RenderedMismatch"
	// SourceIgnore: a .sourceignore at the root or under clusters/:
	// Flux's source-controller leaves out of its artifact what it lists
	// (e.g. a cluster's kustomization.yaml, so that kustomize-controller
	// applies every manifest of the folder, its inbox included).
	SourceIgnore = "SourceIgnore"
	// StaleSeal: a cluster's applied branch points at a seal older
	// than a change the cluster's own reconciler signed on the branch
	// checked since the seal's parent: the cluster applies a state its
	// reconciler has replaced.
	StaleSeal = "StaleSeal"
	// Submodule: a .gitmodules file, a submodule entry (a gitlink) or
	// a nested repository: content of another repository that a recursive
	// clone fetches and nobody signed here.
	Submodule = "Submodule"
	// SymbolicLink: a symbolic link, anywhere in the tree: a checkout
	// follows it where gitpeer's readers refuse to, so they would read
	// different content.
	SymbolicLink = "SymbolicLink"
	// UncheckoutablePath: a path some checkout cannot hold (see
	// checkoutPath): longer than MaxCheckoutPath bytes, a name longer than
	// MaxCheckoutName bytes, or a name Git refuses to check out on Windows
	// (a device name such as aux or con, a trailing dot or space, one of
	// <>:"|?*). Git stops such a checkout with an error ("file name too
	// long", "invalid path"), so CI, a reviewer and a GitOps engine that
	// checks out with the git CLI cannot read the commit at all;
	// gitpeer's readers read Git objects and are not stopped.
	UncheckoutablePath = "UncheckoutablePath"
	// UndeclaredCluster: a tree belongs to a cluster the spec does not declare.
	UndeclaredCluster = "UndeclaredCluster"
	// UnexpectedObject: a cluster's kustomization builds an object that
	// is not one gitpeer renders from verified artifacts, or a file under
	// liqo/ is not such an object.
	UnexpectedObject = "UnexpectedObject"
	// Unreadable: a file cannot be read (e.g. it is a symbolic link).
	Unreadable = "Unreadable"
)
