package pins_test

import (
	"testing"

	"github.com/gitpeer/gitpeer/internal/trust/pins"
)

// TestSeePublishedOnlyRaisesAndRoundTrips: the sequence a cluster found
// published in one of its own directories only grows (an older manifest
// restored from history does not lower it), and survives Encode and Parse.
func TestSeePublishedOnlyRaisesAndRoundTrips(t *testing.T) {
	s := pins.New("alpha")
	for _, seq := range []uint64{5, 11, 7, 0, 11} {
		s.SeePublished("clusters/beta/inbox/alpha", seq)
	}
	if got := s.Published["clusters/beta/inbox/alpha"]; got != 11 {
		t.Fatalf("Published = %d, want 11", got)
	}
	if got := s.Published["clusters/alpha"]; got != 0 {
		t.Fatalf("another directory has %d", got)
	}
	back, err := pins.Parse("pins.yaml", encode(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Published["clusters/beta/inbox/alpha"]; got != 11 {
		t.Fatalf("after a round trip: %v", back.Published)
	}
	if c := s.Clone(); c.Published["clusters/beta/inbox/alpha"] != 11 {
		t.Fatalf("clone: %v", c.Published)
	}
}
