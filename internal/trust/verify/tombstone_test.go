package verify_test

import (
	"path/filepath"
	"testing"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// TestATombstoneIsNoFindingBetweenFormerPeers: delta and beta do not peer.
// A tombstone delta signed in beta's inbox, what delta leaves once a
// peering with beta is revoked, is no finding; a file beside it is an
// UnsignedChange, and a tombstone signed by another key is NotPeered.
func TestATombstoneIsNoFindingBetweenFormerPeers(t *testing.T) {
	const dir = "clusters/beta/inbox/delta"
	keys := demoKeys(t)
	tombstone := func(t *testing.T, writer string) string {
		t.Helper()
		_, data, err := dirmanifest.BuildTombstone(keys[writer], "delta", dir, 1795442400)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}

	repo := checkout(t)
	writeFile(t, filepath.Join(repo, dir, dirmanifest.FileName), tombstone(t, "delta"))
	if findings := checkTree(t, repo, true); len(findings) != 0 {
		t.Fatalf("findings for delta's tombstone:\n%s", list(findings))
	}

	writeFile(t, filepath.Join(repo, dir, "tenant.yaml"), "kind: Tenant\n")
	if findings := checkTree(t, repo, true); !hasFinding(findings, dir+"/tenant.yaml", "", reasons.UnsignedChange) {
		t.Fatalf("a file beside the tombstone is not UnsignedChange:\n%s", list(findings))
	}

	repo = checkout(t)
	writeFile(t, filepath.Join(repo, dir, dirmanifest.FileName), tombstone(t, "alpha"))
	if findings := checkTree(t, repo, true); !hasFinding(findings, dir+"/"+dirmanifest.FileName, "", reasons.NotPeered) {
		t.Fatalf("a tombstone not signed by delta is not NotPeered:\n%s", list(findings))
	}
}
