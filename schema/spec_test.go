package schema

import (
	"reflect"
	"testing"
)

func TestSpecLookups(t *testing.T) {
	s := &Spec{
		Clusters: []Cluster{{ID: "hub"}, {ID: "edge-1", Fingerprint: fpBeta}, {ID: "edge-2"}},
		Peerings: []Peering{
			{Consumer: "edge-1", Provider: "hub"},
			{Consumer: "hub", Provider: "edge-2"},
			{Consumer: "edge-2", Provider: "hub"},
		},
	}
	if c, ok := s.Cluster("edge-1"); !ok || c.Fingerprint != fpBeta {
		t.Errorf("Cluster(edge-1) = %+v, %v", c, ok)
	}
	if c, ok := s.Cluster("nope"); ok || !reflect.DeepEqual(c, Cluster{}) {
		t.Errorf("Cluster(nope) = %+v, %v; want zero, false", c, ok)
	}
	if !s.HasPeering("edge-1", "hub") || s.HasPeering("hub", "edge-1") {
		t.Error("HasPeering must respect the direction")
	}
	asConsumer, asProvider := s.PeeringsOf("hub")
	if want := []Peering{{Consumer: "hub", Provider: "edge-2"}}; !reflect.DeepEqual(asConsumer, want) {
		t.Errorf("hub as consumer = %v, want %v", asConsumer, want)
	}
	if want := []Peering{{Consumer: "edge-1", Provider: "hub"}, {Consumer: "edge-2", Provider: "hub"}}; !reflect.DeepEqual(asProvider, want) {
		t.Errorf("hub as provider = %v, want %v", asProvider, want)
	}
	if c, p := s.PeeringsOf("nope"); c != nil || p != nil {
		t.Errorf("PeeringsOf(nope) = %v, %v; want nil, nil", c, p)
	}

	if got := s.SpecOwners(); got != nil {
		t.Errorf("SpecOwners of a spec naming nobody = %v, want nil", got)
	}
	s.Clusters[0].Owners = []string{"@org/hub", "@ann"}
	s.Clusters[2].Owners = []string{"@ann", "edge@example.com"}
	if got, want := s.SpecOwners(), []string{"@org/hub", "@ann", "edge@example.com"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SpecOwners without spec-level owners = %v, want the clusters' union %v", got, want)
	}
	s.Owners = []string{"@org/platform"}
	if got, want := s.SpecOwners(), []string{"@org/platform"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SpecOwners with spec-level owners = %v, want %v", got, want)
	}

	var nilSpec *Spec
	if _, ok := nilSpec.Cluster("hub"); ok || nilSpec.HasPeering("a", "b") {
		t.Error("a nil spec has no clusters nor peerings")
	}
	if c, p := nilSpec.PeeringsOf("hub"); c != nil || p != nil {
		t.Error("a nil spec has no peerings")
	}
}

func TestSourceIsTheEmbeddedSchema(t *testing.T) {
	src := Source()
	if !reflect.DeepEqual(src, schemaSource) {
		t.Fatal("Source differs from the embedded schema")
	}
	src[0] = 'x'
	if schemaSource[0] == 'x' {
		t.Error("Source returned the embedded slice itself")
	}
}
