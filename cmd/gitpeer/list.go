package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/repo/peerstatus"
	"github.com/gitpeer/gitpeer/schema"
)

// List kinds of gitpeer's -o json and -o yaml: each a Kubernetes-style list
// (apiVersion, kind, items), as `kubectl get -o json` prints one, so that
// `jq '.items[]'` and `yq '.items[]'` work the same on both tools. The kind
// is gitpeer's own (in layout.APIVersion), not v1 List: the items are not
// Kubernetes objects, and a v1 List claims they are.
const (
	// PeeringStatusList: status and wait; items are peerstatus.Peering.
	kindPeeringStatusList = "PeeringStatusList"
	// PinList: trust --list; items are pinItem.
	kindPinList = "PinList"
	// FindingList: verify; items are verify.Finding.
	kindFindingList = "FindingList"
)

// list is the document of a -o json or -o yaml output.
type list struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      any    `json:"items"`
}

// writeList writes items (a slice, never nil: an empty list prints
// "items": []) as a list of kind to w, in format "json" (indented, one
// document) or "yaml".
func writeList(w io.Writer, format, kind string, items any) error {
	return writeObject(w, format, list{APIVersion: layout.APIVersion, Kind: kind, Items: items})
}

// writeObject writes v to w as indented JSON or as YAML (sigs.k8s.io/yaml:
// the JSON field names, keys sorted, as kubectl -o yaml prints them).
func writeObject(w io.Writer, format string, v any) error {
	if format == "yaml" {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// checkFormat returns an error naming the accepted values when output is
// not one of formats.
func checkFormat(output string, formats []string) error {
	if !slices.Contains(formats, output) {
		return fmt.Errorf("-o: %q is not one of %s", output, strings.Join(formats, ", "))
	}
	return nil
}

// errUnknownPeering is wrapped by peeringSelector.check's error for a
// --peering that is neither in the spec nor being revoked; it adds nothing
// to the message.
var errUnknownPeering = errors.New("")

// peeringSelector picks peerings by --cluster ID (peerings the cluster
// takes part in, as consumer or provider) and --peering CONSUMER/PROVIDER;
// both given, a peering must match both. Empty fields select everything.
type peeringSelector struct {
	cluster, peering string
}

// register adds --cluster and --peering to fs; verb says what the command
// does with the peerings picked ("show only", "wait for").
func (s *peeringSelector) register(fs *pflag.FlagSet, verb string) {
	fs.StringVar(&s.cluster, "cluster", "", verb+" the peerings this cluster ID takes part in")
	fs.StringVar(&s.peering, "peering", "", verb+" this peering, CONSUMER/PROVIDER")
}

// check returns an error when a field names a cluster or a peering that the
// spec lacks, listing the spec's ones, so that a typo is not read as
// "nothing to show" (or, for wait, as a condition met by nothing). A
// peering of read that the spec lacks (one being revoked) is accepted.
func (s peeringSelector) check(spec *schema.Spec, read []peerstatus.Peering) error {
	if _, ok := spec.Cluster(s.cluster); s.cluster != "" && !ok {
		ids := make([]string, 0, len(spec.Clusters))
		for _, c := range spec.Clusters {
			ids = append(ids, c.ID)
		}
		return fmt.Errorf("--cluster: %q is not a cluster of the spec (its clusters: %s)", s.cluster, orNone(strings.Join(ids, ", ")))
	}
	if s.peering == "" {
		return nil
	}
	consumer, provider, ok := strings.Cut(s.peering, "/")
	if !ok || consumer == "" || provider == "" || strings.Contains(provider, "/") {
		return fmt.Errorf("--peering: %q is not CONSUMER/PROVIDER (two cluster IDs, e.g. alpha/beta)", s.peering)
	}
	if !spec.HasPeering(consumer, provider) && !slices.ContainsFunc(read, func(p peerstatus.Peering) bool { return p.Consumer == consumer && p.Provider == provider }) {
		names := make([]string, 0, len(spec.Peerings))
		for _, p := range spec.Peerings {
			names = append(names, p.Consumer+"/"+p.Provider)
		}
		return fmt.Errorf("--peering: %q is not a peering of the spec (its peerings, consumer/provider: %s)%w", s.peering, orNone(strings.Join(names, ", ")), errUnknownPeering)
	}
	return nil
}

// peerings are those of ps the selector picks, in their order.
func (s peeringSelector) peerings(ps []peerstatus.Peering) []peerstatus.Peering {
	out := make([]peerstatus.Peering, 0, len(ps))
	for _, p := range ps {
		if s.cluster != "" && p.Consumer != s.cluster && p.Provider != s.cluster {
			continue
		}
		if s.peering != "" && p.Consumer+"/"+p.Provider != s.peering {
			continue
		}
		out = append(out, p)
	}
	return out
}

// clusters are those of cs that --cluster picks, with the peers of its
// peerings in ps (for the graph: a cluster and whom it peers with).
func (s peeringSelector) clusters(cs []peerstatus.Cluster, ps []peerstatus.Peering) []peerstatus.Cluster {
	if s.cluster == "" && s.peering == "" {
		return cs
	}
	keep := map[string]bool{}
	for _, p := range ps {
		keep[p.Consumer], keep[p.Provider] = true, true
	}
	if s.cluster != "" {
		keep[s.cluster] = true
	}
	out := make([]peerstatus.Cluster, 0, len(keep))
	for _, c := range cs {
		if keep[c.ID] {
			out = append(out, c)
		}
	}
	return out
}
