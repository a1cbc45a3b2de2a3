package demo_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/demo"
	"github.com/gitpeer/gitpeer/schema"
)

func TestMeshIsDeterministicAndValid(t *testing.T) {
	a, err := demo.Mesh(20, 60)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := demo.Mesh(20, 60)
	if !bytes.Equal(a["peering.cue"], b["peering.cue"]) {
		t.Fatal("the same mesh twice differs")
	}
	spec, err := schema.Parse("peering.cue", a["peering.cue"])
	if err != nil {
		t.Fatalf("the mesh's spec does not validate: %v", err)
	}
	if len(spec.Clusters) != 20 || len(spec.Peerings) != 60 {
		t.Fatalf("%d clusters, %d peerings; want 20 and 60", len(spec.Clusters), len(spec.Peerings))
	}
	consumes, provides := map[string]int{}, map[string]int{}
	pairs := map[string]bool{}
	for _, p := range spec.Peerings {
		if p.Consumer == p.Provider || pairs[p.Consumer+"/"+p.Provider] {
			t.Errorf("peering %s → %s is a loop or twice", p.Consumer, p.Provider)
		}
		pairs[p.Consumer+"/"+p.Provider] = true
		consumes[p.Consumer]++
		provides[p.Provider]++
	}
	for _, c := range spec.Clusters {
		if consumes[c.ID] != 3 || provides[c.ID] != 3 {
			t.Errorf("%s consumes from %d and provides to %d, want 3 and 3", c.ID, consumes[c.ID], provides[c.ID])
		}
	}
	// Every ordered pair, and no more.
	if _, err := demo.Mesh(4, 12); err != nil {
		t.Errorf("a full mesh of 4: %v", err)
	}
	for _, bad := range [][2]int{{1, 1}, {4, 13}, {4, 0}, {demo.MaxMeshClusters + 1, 1}} {
		if _, err := demo.Mesh(bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), "must be between") {
			t.Errorf("Mesh(%d, %d) = %v, want a range error", bad[0], bad[1], err)
		}
	}
}

// TestConcurrentReconcilersLoseNothing runs a reconciler per cluster of a
// mesh all at once, through one real bare repo, round after round: every
// push but one per burst is rejected, and each must land by re-applying its
// change, never by losing or repeating an artifact.
func TestConcurrentReconcilersLoseNothing(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	const clusters, peerings = 8, 16
	dir := t.TempDir()
	var out bytes.Buffer
	rep, err := demo.Run(context.Background(), demo.Options{Dir: dir, Clusters: clusters, Peerings: peerings, Concurrent: true}, &out)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String()) // verify holds and every peering is Ready, or this fails
	}
	tot := rep.Totals()
	t.Logf("%d clusters, %d peerings at once: %d rounds, %d commits, %d push retries, %s", clusters, peerings, tot.Rounds, tot.Commits, tot.Retries, tot.Elapsed)
	if tot.Failed != 0 {
		t.Errorf("%d passes failed:\n%s", tot.Failed, out.String())
	}
	if tot.Retries == 0 {
		t.Errorf("no push was retried: the reconcilers did not contend\n%s", out.String())
	}
	// The handshake is four passes deep (nonce, tenant, identity, accept)
	// and every peering advances in each of its clusters' passes, so
	// concurrent rounds that lose nothing converge in four. (In turn,
	// providers first, a nonce and its tenant can land in one round: three.)
	if tot.Rounds > 4 {
		t.Errorf("%d rounds, want at most 4\n%s", tot.Rounds, out.String())
	}
	if tot.Commits != len(rep.Commits)-clusters {
		t.Errorf("rounds counted %d commits, %d recorded besides the publications", tot.Commits, len(rep.Commits)-clusters)
	}

	remote := filepath.Join(dir, "remote.git")
	git(t, "-C", remote, "fsck", "--strict", "--no-dangling")
	if merges := git(t, "-C", remote, "rev-list", "--merges", "main"); merges != "" {
		t.Errorf("history has merges: %s", merges)
	}
	// Every recorded commit is on main, and main holds no other commit of
	// a reconciler: nothing landed twice, nothing was lost.
	onMain := map[string]bool{}
	for _, h := range strings.Fields(git(t, "-C", remote, "rev-list", "main")) {
		onMain[h] = true
	}
	for _, c := range rep.Commits {
		if !onMain[c.Hash] {
			t.Errorf("commit %s of %s (%s) is not on main", c.Hash[:12], c.Cluster, c.Subject)
		}
	}
	if len(onMain) != len(rep.Commits)+1 { // and the seed
		t.Errorf("main has %d commits, want the %d the reconcilers pushed and the seed", len(onMain), len(rep.Commits))
	}
	// Each handshake artifact was written once, by its writer, and never
	// rewritten or removed.
	changes := map[string][]string{}
	log := git(t, "-C", remote, "log", "--reverse", "--format=", "--name-status", "main")
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if st, path, ok := strings.Cut(line, "\t"); ok {
			changes[path] = append(changes[path], st)
		}
	}
	spec, err := schema.Parse("peering.cue", mustMesh(t, clusters, peerings))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range spec.Peerings {
		for _, f := range []string{
			fmt.Sprintf("clusters/%s/inbox/%s/nonce.yaml", p.Consumer, p.Provider),
			fmt.Sprintf("clusters/%s/inbox/%s/tenant.yaml", p.Provider, p.Consumer),
			fmt.Sprintf("clusters/%s/inbox/%s/identity.yaml", p.Consumer, p.Provider),
		} {
			if got := strings.Join(changes[f], ","); got != "A" {
				t.Errorf("%s: changes %q, want one addition", f, got)
			}
		}
	}
}

func mustMesh(t *testing.T, clusters, peerings int) []byte {
	t.Helper()
	files, err := demo.Mesh(clusters, peerings)
	if err != nil {
		t.Fatal(err)
	}
	return files["peering.cue"]
}
