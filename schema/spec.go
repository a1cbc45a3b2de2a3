// Package schema defines gitpeer's peering spec: the file at the root of a
// peering repository that declares which clusters exist and which of them
// peer with which, following Liqo's consumer/provider model.
//
// The spec is written in CUE (peering.cue) or, for those who prefer it, in
// plain YAML (peering.yaml or peering.yml). Either way it is validated
// against the CUE schema embedded in this package (see [Source]), then
// against the rules a schema cannot express (every peering names known,
// distinct clusters; no duplicate clusters or peerings). Every problem is
// reported with its position in the user's file, as file:line:col, so that
// editors and CI logs can point at it.
//
// [JSONSchema] exports the same schema as JSON Schema for editors that
// validate YAML while typing (yaml-language-server).
package schema

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Spec is the peering spec of one repository, as decoded from peering.cue
// or peering.yaml. A Spec returned by [Parse] or [Load] is valid: cluster IDs
// are unique DNS-1123 labels of at most 51 characters, and every peering
// joins two distinct clusters of Clusters, at most once. Its lists are nil
// when empty, whether the file wrote [] or nothing: one form per meaning,
// which encoding/json (omitempty) carries unchanged, as LoadBounded's
// evaluator process does.
type Spec struct {
	// Clusters are the clusters taking part in peerings, in spec order.
	Clusters []Cluster `json:"clusters,omitempty"`
	// Peerings are the consumer/provider pairs to establish, in spec order.
	Peerings []Peering `json:"peerings,omitempty"`
	// Owners review changes to the spec itself: "@user", "@org/team" or an
	// email address, as CODEOWNERS writes them. Empty: every cluster's
	// owners (see [Spec.SpecOwners]).
	Owners []string `json:"owners,omitempty"`
}

// Cluster is one cluster of the spec.
type Cluster struct {
	// ID is the cluster's Liqo cluster ID.
	ID string `json:"id"`
	// Fingerprint, when set, pins the cluster's identity key:
	// "sha256:" and the lowercase hex SHA-256 of its PKIX DER public key.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Provider configures the cluster when it provides resources.
	Provider *ProviderSettings `json:"provider,omitempty"`
	// Owners are the people or teams who answer for the cluster ("@user",
	// "@org/team" or an email address, as CODEOWNERS writes them): the code
	// owners of the paths the cluster writes. Empty: none named.
	Owners []string `json:"owners,omitempty"`
}

// ProviderSettings are a provider's terms, the same for all its consumers.
type ProviderSettings struct {
	// CertificateLifetime is the validity of the client certificates the
	// provider signs (a Go duration, e.g. "720h", at least
	// MinCertificateLifetime); empty: the reconciler's default. Certificates
	// are re-signed once a third of it is left.
	CertificateLifetime string `json:"certificateLifetime,omitempty"`
	// NonceLifetime is how long a nonce may go unanswered before a fresh
	// one replaces it (a Go duration); empty: 168h.
	NonceLifetime string `json:"nonceLifetime,omitempty"`
	// DrainPeriod is how long a peering removed from the spec keeps its
	// Tenant Drained in the repo before the provider withdraws it, so the
	// GitOps engine applies the drained Tenant before pruning it; a Go
	// duration, default 10m ("0s": withdraw in the next pass).
	DrainPeriod string `json:"drainPeriod,omitempty"`
	// Classes are the ResourceSlice classes offered; empty: Liqo's "default"
	// class with Liqo's default caps (cpu 4, memory 8Gi, pods 110,
	// ephemeral-storage 20Gi).
	Classes []SliceClass `json:"classes,omitempty"`
}

// SliceClass is a ResourceSlice class a provider offers.
type SliceClass struct {
	Name string `json:"name"`
	// Caps are the most a slice of the class may ask for, per resource, as
	// Kubernetes quantities. A resource without a cap cannot be asked for.
	Caps map[string]string `json:"caps"`
}

// Acceptance policies: how a provider accepts a consumer's Tenant.
const (
	// PolicyPinned accepts only the key the consumer published in its
	// cluster.yaml (and the spec's fingerprint, when pinned).
	PolicyPinned = "pinned"
	// PolicyOpen accepts any listed consumer and pins its first key, like
	// Liqo v0.2's allowEmptyToken.
	PolicyOpen = "open"
	// PolicyToken accepts a consumer proving it holds a token the admins
	// shared out of band, like Liqo v0.2's token matching; its first key is
	// then pinned.
	PolicyToken = "token"
)

// Pair names a peering by its two clusters (cluster IDs): comparable, for
// a map key.
type Pair struct{ Consumer, Provider string }

// Pair is the peering's Pair.
func (p Peering) Pair() Pair { return Pair{p.Consumer, p.Provider} }

// Peering is a Liqo peering in which Consumer uses resources of Provider.
// Both are cluster IDs.
type Peering struct {
	Consumer string `json:"consumer"`
	Provider string `json:"provider"`
	// Policy is how the provider accepts the consumer: pinned (default),
	// open or token.
	Policy string `json:"policy,omitempty"`
	// TenantCondition is Liqo's Tenant condition on the provider: Active
	// (default), Cordoned (no new slices accepted, existing kept) or
	// Drained (slices denied, RBAC unbound).
	TenantCondition string `json:"tenantCondition,omitempty"`
	// Slices are the ResourceSlices the consumer asks the provider for.
	Slices []Slice `json:"slices,omitempty"`
}

// Slice is a ResourceSlice a consumer asks for.
type Slice struct {
	// Name is the ResourceSlice's name (a DNS-1123 label).
	Name string `json:"name"`
	// Class is the slice class; empty means "default".
	Class string `json:"class,omitempty"`
	// Resources are Kubernetes quantities by resource name (cpu, memory,
	// pods, ephemeral-storage or any extended resource).
	Resources map[string]string `json:"resources"`
	// CreateVirtualNode asks Liqo for a virtual node (annotation
	// liqo.io/create-virtual-node); nil means yes.
	CreateVirtualNode *bool `json:"createVirtualNode,omitempty"`
}

// dropEmptyLists sets the empty lists of s to nil.
func (s *Spec) dropEmptyLists() {
	if len(s.Clusters) == 0 {
		s.Clusters = nil
	}
	if len(s.Peerings) == 0 {
		s.Peerings = nil
	}
	if len(s.Owners) == 0 {
		s.Owners = nil
	}
	for i := range s.Clusters {
		if len(s.Clusters[i].Owners) == 0 {
			s.Clusters[i].Owners = nil
		}
		if p := s.Clusters[i].Provider; p != nil && len(p.Classes) == 0 {
			p.Classes = nil
		}
	}
	for i := range s.Peerings {
		if len(s.Peerings[i].Slices) == 0 {
			s.Peerings[i].Slices = nil
		}
	}
}

// AcceptPolicy is the peering's policy, PolicyPinned when unset.
func (p Peering) AcceptPolicy() string {
	if p.Policy == "" {
		return PolicyPinned
	}
	return p.Policy
}

// Condition is the peering's Tenant condition, "Active" when unset.
func (p Peering) Condition() string {
	if p.TenantCondition == "" {
		return "Active"
	}
	return p.TenantCondition
}

// VirtualNode reports whether the slice asks for a virtual node.
func (s Slice) VirtualNode() bool { return s.CreateVirtualNode == nil || *s.CreateVirtualNode }

// Cluster returns the cluster whose ID is id, and whether there is one.
func (s *Spec) Cluster(id string) (Cluster, bool) {
	if s == nil {
		return Cluster{}, false
	}
	for _, c := range s.Clusters {
		if c.ID == id {
			return c, true
		}
	}
	return Cluster{}, false
}

// SpecOwners are the owners of the spec itself: Owners when set, else the
// union of every cluster's owners in spec order, each once. Nil when
// nobody is named.
func (s *Spec) SpecOwners() []string {
	if s == nil {
		return nil
	}
	if len(s.Owners) > 0 {
		return slices.Clone(s.Owners)
	}
	var out []string
	for _, c := range s.Clusters {
		for _, o := range c.Owners {
			if !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	return out
}

// HasPeering reports whether the spec asks for a peering in which consumer
// uses resources of provider. The direction matters.
func (s *Spec) HasPeering(consumer, provider string) bool {
	if s == nil {
		return false
	}
	for _, p := range s.Peerings {
		if p.Consumer == consumer && p.Provider == provider {
			return true
		}
	}
	return false
}

// PeeringsOf returns the peerings where id is the consumer and where it is
// the provider, in spec order. Both are nil when id takes part in none.
func (s *Spec) PeeringsOf(id string) (asConsumer, asProvider []Peering) {
	if s == nil {
		return nil, nil
	}
	for _, p := range s.Peerings {
		if p.Consumer == id {
			asConsumer = append(asConsumer, p)
		}
		if p.Provider == id {
			asProvider = append(asProvider, p)
		}
	}
	return asConsumer, asProvider
}

// SpecFiles are the names Load looks for, in order. Exactly one of them
// must exist at the root of a peering repository.
var SpecFiles = []string{"peering.cue", "peering.yaml", "peering.yml"}

// Load finds the spec file in dir (one of [SpecFiles]) and parses it with
// [Parse], using the file's path (dir joined with its name) in positions.
// It returns the spec and that path.
//
// Errors: a *[Error] when the file is invalid (the path is returned too);
// otherwise a wrapped error naming the path or dir: no spec file (wrapping
// [fs.ErrNotExist]), more than one spec file, or the file cannot be read.
func Load(dir string) (*Spec, string, error) {
	path, data, err := findSpec(dir)
	if err != nil {
		return nil, path, err
	}
	spec, err := Parse(path, data)
	return spec, path, err
}

// findSpec finds and reads the spec file of dir for Load and LoadBounded,
// with Load's errors. The path is returned with an error about the file,
// empty with an error about dir.
func findSpec(dir string) (string, []byte, error) {
	root := dir
	if root == "" {
		root = "."
	}
	return FindSpec(os.DirFS(root), dir)
}

// FindSpec is Load's search for the spec file in the root of fsys (a
// directory, or a commit's tree) named dir: exactly one of [SpecFiles],
// read up to Parse's size limit (one byte more, so that Parse names the
// size). The path returned, and named in errors, is dir joined with the
// file's name, as Load names it; it is returned with an error about the
// file, empty with an error about dir (none found, wrapping
// [fs.ErrNotExist], or more than one).
func FindSpec(fsys fs.FS, dir string) (string, []byte, error) {
	var found []string
	for _, name := range SpecFiles {
		p := filepath.Join(dir, name)
		_, err := fs.Stat(fsys, name)
		switch {
		case err == nil:
			found = append(found, name)
		case errors.Is(err, fs.ErrNotExist):
		default:
			return p, nil, fmt.Errorf("look for peering spec: %w", renamed(err, p))
		}
	}
	switch len(found) {
	case 0:
		return "", nil, fmt.Errorf("no peering spec in %s (want one of %s): %w",
			dir, strings.Join(SpecFiles, ", "), fs.ErrNotExist)
	case 1:
	default:
		// Picking one silently would let the other drift unnoticed.
		paths := make([]string, len(found))
		for i, name := range found {
			paths[i] = filepath.Join(dir, name)
		}
		return "", nil, fmt.Errorf("more than one peering spec in %s: %s; keep only one",
			dir, strings.Join(paths, " and "))
	}
	p := filepath.Join(dir, found[0])
	data, err := readSpec(fsys, found[0])
	if err != nil {
		return p, nil, fmt.Errorf("read peering spec: %w", renamed(err, p))
	}
	return p, data, nil
}

// readSpec reads at most one byte more than Parse accepts, so that a huge
// file is rejected by Parse's size check without being read whole.
func readSpec(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSpecSize+1))
}

// renamed is err with the path of its *fs.PathError set to p: fs.FS names
// paths relative to its root, Load's errors name them as given.
func renamed(err error, p string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	return err
}
