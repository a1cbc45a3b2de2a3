// Package layout is the shape of a peering repo: where each artifact lives,
// who may write it, and the repo's own kinds (cluster.yaml, status.yaml,
// kustomization.yaml).
//
//	peering.cue                       spec (humans)
//	clusters/<id>/cluster.yaml        <id>'s public facts
//	clusters/<id>/kustomization.yaml  what Flux or Argo CD applies to <id>
//	clusters/<id>/liqo/<peer>/…       objects <id> rendered for itself, per peer
//	clusters/<id>/inbox/<from>/…      artifacts <from> addressed to <id>
//	clusters/<id>/status.yaml         <id>'s per-peering conditions
//	clusters/<id>/flux/…              the Secret <id>'s Flux verifies with
//	                                  (package fluxtrust)
//	clusters/<id>/openpgp.asc         <id>'s OpenPGP key, when it signs its
//	                                  commits with OpenPGP (for Argo CD)
//
// A cluster writes only under clusters/<self>/ (never its own inbox) and
// clusters/*/inbox/<self>/, so the write sets of two clusters never overlap.
package layout

import (
	"path"
	"strings"
)

// Root directory of every cluster's tree, and the file names inside it.
const (
	ClustersDir       = "clusters"
	ClusterFile       = "cluster.yaml"
	KustomizationFile = "kustomization.yaml"
	StatusFile        = "status.yaml"
	LiqoDir           = "liqo"
	InboxDir          = "inbox"

	// OpenPGPKeyFile is the armored OpenPGP public key a cluster that signs
	// its commits with OpenPGP publishes (commitsig.OpenPGPPublicKey): the
	// file to import into GnuPG and Argo CD. Not YAML and never listed in
	// the kustomization, it is never applied.
	OpenPGPKeyFile = "openpgp.asc"

	// Inbox artifact names.
	NonceFile    = "nonce.yaml"
	TenantFile   = "tenant.yaml"
	IdentityFile = "identity.yaml"
)

// ClusterPath is "clusters/<id>/<elem...>".
func ClusterPath(id string, elem ...string) string {
	return path.Join(append([]string{ClustersDir, id}, elem...)...)
}

// InboxPath is "clusters/<to>/inbox/<from>/<name>": an artifact <from> addresses to <to>.
func InboxPath(to, from, name string) string {
	return ClusterPath(to, InboxDir, from, name)
}

// PeerDir is "clusters/<self>/liqo/<peer>": the objects self renders for one peering.
func PeerDir(self, peer string) string {
	return ClusterPath(self, LiqoDir, peer)
}

// Split parses a repo path under clusters/. It returns the owning cluster
// tree, the sender when the path is in an inbox ("" otherwise) and the rest.
func Split(p string) (cluster, from, rest string, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) < 3 || parts[0] != ClustersDir || parts[1] == "" {
		return "", "", "", false
	}
	cluster = parts[1]
	if parts[2] == InboxDir {
		if len(parts) < 5 || parts[3] == "" {
			return "", "", "", false
		}
		return cluster, parts[3], strings.Join(parts[4:], "/"), true
	}
	return cluster, "", strings.Join(parts[2:], "/"), true
}

// Writable reports whether cluster self may write p under the ownership rule:
// its own tree except its inbox, and its own folder in every other inbox.
// A reconciler recomputes every such path each pass and deletes those it
// does not want: a file nobody signed there (a human's README included) is
// removed, so the tree Flux applies is exactly what the reconciler vouched
// for. cluster.yaml is carried over as gitpeer init published it.
func Writable(self, p string) bool {
	cluster, from, _, ok := Split(p)
	if !ok {
		return false
	}
	if from != "" {
		return from == self && cluster != self
	}
	return cluster == self
}

// AppliedBranchPrefix starts the branch each cluster points at the signed
// commit whose clusters/<id>/ it computed: its Flux tracks
// gitpeer/applied/<id>, which only that cluster writes.
const AppliedBranchPrefix = "gitpeer/applied/"

// AppliedBranch is "gitpeer/applied/<id>".
func AppliedBranch(id string) string { return AppliedBranchPrefix + id }
