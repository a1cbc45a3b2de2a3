package reconcile_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/reconcile"
)

// TestDiffDeletesWhatSelfWroteAndNothingElse: Diff removes every file of
// alpha's own tree and of its folders in other inboxes that the pass no
// longer wants, whether or not the pass writes to that cluster; it leaves
// others' files, a file or link standing at a folder's path, and
// everything in alpha's own inbox alone, and replaces what stands where a
// desired directory goes.
func TestDiffDeletesWhatSelfWroteAndNothingElse(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"clusters/alpha/cluster.yaml":               "kept\n",
		"clusters/alpha/liqo/old/tenant.yaml":       "stale own\n",
		"clusters/alpha/inbox/beta/nonce.yaml":      "beta's\n",
		"clusters/beta/inbox/alpha/tenant.yaml":     "stale in a peer we still write to\n",
		"clusters/beta/liqo/x.yaml":                 "beta's own\n",
		"clusters/gamma/inbox/alpha/tenant.yaml":    "stale in a peer we no longer write to\n",
		"clusters/gamma/inbox/alpha/deep/x.yaml":    "stale, deeper\n",
		"clusters/gamma/inbox/delta/nonce.yaml":     "delta's\n",
		"clusters/delta/inbox/alpha":                "a file at our folder's path\n",
		"clusters/epsilon/inbox/zeta/identity.yaml": "zeta's\n",
		"clusters/omega":                            "a file where a cluster's tree goes\n",
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "clusters", "eta", "inbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../alpha", filepath.Join(dir, "clusters", "eta", "inbox", "alpha")); err != nil {
		t.Fatal(err)
	}
	desired := map[string][]byte{
		"clusters/alpha/cluster.yaml":                      []byte("kept\n"),
		"clusters/beta/inbox/alpha/resourceslice-new.yaml": []byte("new\n"),
	}
	plan, err := reconcile.Diff(layout.NewTree(dir), "alpha", &reconcile.Output{Files: desired})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"clusters/alpha/liqo/old/tenant.yaml",
		"clusters/beta/inbox/alpha/tenant.yaml",
		"clusters/gamma/inbox/alpha/deep/x.yaml",
		"clusters/gamma/inbox/alpha/tenant.yaml",
	}
	if !slices.Equal(plan.Deletes, want) {
		t.Errorf("deletes %q, want %q", plan.Deletes, want)
	}
	if len(plan.Writes) != 1 || plan.Writes["clusters/beta/inbox/alpha/resourceslice-new.yaml"] == nil {
		t.Errorf("writes %v, want only the new file", plan.Writes)
	}

	// A file where a desired directory goes is in the way: deleted.
	desired["clusters/delta/inbox/alpha/nonce.yaml"] = []byte("n\n")
	plan, err = reconcile.Diff(layout.NewTree(dir), "alpha", &reconcile.Output{Files: desired})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(plan.Deletes, "clusters/delta/inbox/alpha") {
		t.Errorf("deletes %q, want the file in the way at clusters/delta/inbox/alpha", plan.Deletes)
	}
}

// TestDiffRefusesToWriteAnythingButArtifactsIntoAnInbox: a pass that would
// write into another cluster's inbox a file that is no artifact (an object
// for Flux, a file in a subfolder) is a bug, refused before it is
// committed; into its own tree it writes what it renders.
func TestDiffRefusesToWriteAnythingButArtifactsIntoAnInbox(t *testing.T) {
	tree := layout.NewTree(t.TempDir())
	for _, f := range []string{
		"clusters/beta/inbox/alpha/clusterrolebinding-evil.yaml",
		"clusters/beta/inbox/alpha/sub/tenant.yaml",
		"clusters/beta/inbox/alpha/kustomization.yaml",
	} {
		_, err := reconcile.Diff(tree, "alpha", &reconcile.Output{Files: map[string][]byte{f: []byte("x\n")}})
		if err == nil || !strings.Contains(err.Error(), "not an artifact") {
			t.Errorf("Diff writing %s: %v, want a refusal naming it not an artifact", f, err)
		}
	}
	for _, f := range []string{
		"clusters/beta/inbox/alpha/tenant.yaml",
		"clusters/beta/inbox/alpha/nonce.yaml",
		"clusters/beta/inbox/alpha/resourceslice-pool.status.yaml",
		"clusters/beta/inbox/alpha/manifest.yaml",
		"clusters/alpha/liqo/beta/clusterrolebinding-x.yaml",
	} {
		if _, err := reconcile.Diff(tree, "alpha", &reconcile.Output{Files: map[string][]byte{f: []byte("x\n")}}); err != nil {
			t.Errorf("Diff writing %s: %v", f, err)
		}
	}
}
