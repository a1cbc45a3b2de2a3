package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// converge runs alpha's and beta's reconcilers in turn, provider first,
// until the peering of peeringRepo is Ready (four passes).
func converge(t *testing.T, root, remote string, ids ...string) {
	t.Helper()
	if len(ids) == 0 {
		ids = []string{"beta", "alpha", "beta", "alpha"}
	}
	for _, id := range ids {
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", filepath.Join(root, "state", id)); code != 0 {
			t.Fatalf("reconcile %s: %s", id, stderr)
		}
	}
}

// statusItems is status -o json's items, the fields these tests read.
type statusItems struct {
	Items []struct {
		Consumer, Provider, Step, State, Message string
		Ready, Peered                            bool
		RevokingSince, WithdrawnAfter            *time.Time
		Next                                     *struct{ Cluster, Action, Branch, File, Message string }
	}
}

func statusJSON(t *testing.T, args ...string) statusItems {
	t.Helper()
	code, out, stderr := gitpeer(t, append([]string{"status", "-o", "json"}, args...)...)
	var list statusItems
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("status -o json %v: exit %d %v\n%s%s", args, code, err, out, stderr)
	}
	return list
}

// TestStatusShowsARevocationUntilWithdrawn: after the peering's removal is
// merged, the provider drains the Tenant and withdraws it a drain period
// later; until then status, -o json, STATUS.md and wait show it Revoking
// with the time it is withdrawn after, and once withdrawn it is gone.
func TestStatusShowsARevocationUntilWithdrawn(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	converge(t, root, remote)
	git(t, work, "pull", "-q", "--ff-only")
	write(t, filepath.Join(work, "peering.cue"), "clusters: [{id: \"alpha\"}, {id: \"beta\"}]\n")
	git(t, work, "commit", "-qam", "unpeer alpha from beta")
	git(t, work, "push", "-q", "origin", "main")
	converge(t, root, remote, "beta", "alpha")

	list := statusJSON(t, remote)
	if len(list.Items) != 1 {
		t.Fatalf("status lists %d peerings, want the revocation: %+v", len(list.Items), list.Items)
	}
	p := list.Items[0]
	if p.Step != "Revoking" || p.Ready || p.RevokingSince == nil || p.WithdrawnAfter == nil || !p.WithdrawnAfter.Equal(p.RevokingSince.Add(10*time.Minute)) {
		t.Fatalf("revocation: %+v, want Revoking, withdrawn the default drain period (10m) after it began", p)
	}
	after := p.WithdrawnAfter.UTC().Format(time.RFC3339)
	want := "alpha     beta      Revoking  false  -       removed from the spec: beta's reconciler withdraws it at its first pass after " + after
	page := filepath.Join(t.TempDir(), "STATUS.md")
	code, out, _ := gitpeer(t, "status", remote, "--exit-code", "--write", page)
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("status --exit-code: exit %d, want 1 and the row\n%s\n%s", code, want, out)
	}
	if data, _ := os.ReadFile(page); !strings.Contains(string(data), "| alpha | beta | Reconciling | Revoking |  | removed from the spec: beta's reconciler withdraws it at its first pass after "+after) ||
		!strings.Contains(string(data), "Revoking, withdrawn after "+after) {
		t.Errorf("STATUS.md lacks the revocation:\n%s", data)
	}
	if code, _, stderr := gitpeer(t, "status", remote, "--peering", "alpha/beta"); code != 0 {
		t.Errorf("status --peering of a revocation: exit %d %s", code, stderr)
	}
	if code, _, stderr := gitpeer(t, "wait", remote, "--peering", "alpha/beta", "--timeout", "0"); code != 2 || !strings.Contains(stderr, "--peering alpha/beta is being revoked") || !strings.Contains(stderr, "wait --for=delete") {
		t.Errorf("wait for Ready of a revocation: exit %d, want 2 saying it never becomes Ready\n%s", code, stderr)
	}
	if code, _, stderr := gitpeer(t, "wait", remote, "--for=delete", "--peering", "alpha/beta", "--timeout", "0"); code != 1 ||
		!strings.Contains(stderr, "peering alpha/beta is not withdrawn yet: step Revoking, Reconciling: removed from the spec: beta's reconciler withdraws it at its first pass after "+after) {
		t.Errorf("wait --for=delete before the withdrawal: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := gitpeer(t, "wait", remote, "--timeout", "0"); code != 0 {
		t.Errorf("wait for every peering of a spec that has none: exit %d %s", code, stderr)
	}

	// The drain period cut to nothing: beta's next pass withdraws it.
	git(t, work, "pull", "-q", "--ff-only")
	write(t, filepath.Join(work, "peering.cue"), "clusters: [{id: \"alpha\"}, {id: \"beta\", provider: {drainPeriod: \"0s\"}}]\n")
	git(t, work, "commit", "-qam", "withdraw at once")
	git(t, work, "push", "-q", "origin", "main")
	converge(t, root, remote, "beta")
	if list := statusJSON(t, remote); len(list.Items) != 0 {
		t.Errorf("a withdrawn peering is still shown: %+v", list.Items)
	}
	if code, out, stderr := gitpeer(t, "wait", remote, "--for=delete", "--peering", "alpha/beta", "--timeout", "0"); code != 0 || out != "peering alpha/beta deleted\n" {
		t.Errorf("wait --for=delete once withdrawn: exit %d\n%s%s", code, out, stderr)
	}
}

// TestADeniedSliceIsNotReady: in examples/three-clusters, gamma denies
// delta's bigbatch (cpu 32 over a cap of 8): wait for Ready and status
// --exit-code fail naming the slice; condition=Peered (the handshake
// alone) holds.
func TestADeniedSliceIsNotReady(t *testing.T) {
	repo := filepath.Join("testdata", "status", "converged", "input") // three-clusters, converged by the demo
	code, _, stderr := gitpeer(t, "wait", repo, "--peering", "delta/gamma", "--for=condition=Ready", "--timeout", "0")
	want := "peering delta/gamma is not Ready: step Ready, Stalled: edit peering.cue: slice bigbatch is denied by gamma (ResourceSliceResourcesDenied: cpu: requested 32 exceeds the cap 8 of class default)"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("wait for Ready: exit %d, want 1 and %q\n%s", code, want, stderr)
	}
	if code, out, stderr := gitpeer(t, "wait", repo, "--peering", "delta/gamma", "--for=condition=Peered", "--timeout", "0"); code != 0 || out != "peering delta/gamma condition met\n" {
		t.Errorf("wait for Peered: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ := gitpeer(t, "status", repo, "--peering", "delta/gamma", "--exit-code")
	if code != 1 || !strings.Contains(out, "delta     gamma     Ready  false  batch:Accepted bigbatch:Denied  edit peering.cue: slice bigbatch is denied by gamma") {
		t.Errorf("status --exit-code: exit %d\n%s", code, out)
	}
	if code, _, _ := gitpeer(t, "status", repo, "--peering", "alpha/beta", "--exit-code"); code != 0 {
		t.Errorf("status --exit-code of a peering whose slices are granted: exit %d", code)
	}
	p := statusJSON(t, repo, "--peering", "delta/gamma").Items[0]
	if p.Ready || !p.Peered || p.State != "Stalled" || p.Next == nil || p.Next.Action != "EditSpec" || p.Next.File != "peering.cue" {
		t.Errorf("-o json: %+v next %+v", p, p.Next)
	}
}

// TestStatusNamesWhoMustActNext: a peering not Ready says whose turn it is
// and what to do: run the reconciler that has not reported it, merge the
// review branch holding its next step (on the remote and on a checkout
// that fetched it), publish a cluster, or merge the branch that does.
func TestStatusNamesWhoMustActNext(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	if code, out, _ := gitpeer(t, "status", remote); code != 0 ||
		!strings.Contains(out, "alpha     beta      Pending  false  -       run beta's reconciler: it sends alpha a nonce (beta has not reported this peering on the branch read)") {
		t.Errorf("before any pass: exit %d\n%s", code, out)
	}

	// beta proposes its nonce on a review branch.
	if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "beta", "--repo", remote, "--state-dir", filepath.Join(root, "state", "beta"),
		"--push-branch", "gitpeer/{cluster}"); code != 0 {
		t.Fatal(stderr)
	}
	merge := "merge branch gitpeer/beta: beta's proposal takes this peering to NonceSent there"
	if code, out, _ := gitpeer(t, "status", remote); code != 0 || !strings.Contains(out, "alpha     beta      Pending  false  -       "+merge) {
		t.Errorf("status of the remote with a proposal: exit %d\n%s", code, out)
	}
	git(t, work, "fetch", "-q", "origin")
	p := statusJSON(t, work).Items[0]
	if p.Next == nil || p.Next.Action != "MergeProposal" || p.Next.Branch != "gitpeer/beta" || p.Next.Cluster != "beta" || !strings.HasPrefix(p.Message, merge) {
		t.Errorf("status of a checkout that fetched the proposal: %+v next %+v", p, p.Next)
	}
	if code, _, stderr := gitpeer(t, "wait", remote, "--timeout", "0"); code != 1 || !strings.Contains(stderr, "peering alpha/beta is not Ready: step Pending, Reconciling: "+merge) {
		t.Errorf("wait: exit %d\n%s", code, stderr)
	}

	// gamma joins the spec; its cluster.yaml is on a branch not merged yet.
	git(t, work, "merge", "-q", "--ff-only", "origin/gitpeer/beta")
	write(t, filepath.Join(work, "peering.cue"), `clusters: [{id: "alpha"}, {id: "beta"}, {id: "gamma"}]
peerings: [{consumer: "alpha", provider: "beta"}, {consumer: "gamma", provider: "beta"}]
`)
	git(t, work, "commit", "-qam", "peer gamma with beta")
	git(t, work, "push", "-q", "origin", "main")
	publish := "publish gamma: clusters/gamma/cluster.yaml is not on the branch read (run gitpeer init --cluster gamma --repo <checkout>, then commit and merge clusters/gamma/)"
	if code, out, _ := gitpeer(t, "status", remote, "--peering", "gamma/beta"); code != 0 || !strings.Contains(out, "gamma     beta      Pending  false  -       "+publish) {
		t.Errorf("a cluster not published: exit %d\n%s", code, out)
	}
	git(t, work, "checkout", "-q", "-b", "add-gamma")
	if code, _, stderr := gitpeer(t, "init", "--cluster", "gamma", "--api-server", "https://gamma.example:6443", "--state-dir", filepath.Join(root, "state", "gamma"), "--repo", work); code != 0 {
		t.Fatal(stderr)
	}
	git(t, work, "add", "-A")
	git(t, work, "commit", "-qm", "publish gamma")
	git(t, work, "push", "-q", "origin", "add-gamma")
	git(t, work, "checkout", "-q", "main")
	if code, out, _ := gitpeer(t, "status", remote, "--peering", "gamma/beta"); code != 0 ||
		!strings.Contains(out, "gamma     beta      Pending  false  -       merge branch add-gamma: it publishes clusters/gamma/cluster.yaml") {
		t.Errorf("a cluster.yaml awaiting its merge: exit %d\n%s", code, out)
	}
}

// TestStatusSaysAHandEditedStatusIsNotSigned: a writer edits alpha's
// status.yaml on main; status reads it as the reconcilers do, as absent,
// and says why and who repairs it, until alpha's next pass has.
func TestStatusSaysAHandEditedStatusIsNotSigned(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	converge(t, root, remote)
	git(t, work, "pull", "-q", "--ff-only")
	file := filepath.Join(work, "clusters", "alpha", "status.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	write(t, file, strings.Replace(string(data), "accepted", "accepted (checked by hand)", 1))
	git(t, work, "commit", "-qam", "a note in alpha's status")
	git(t, work, "push", "-q", "origin", "main")

	want := "alpha     beta      IdentityIssued  false  -       run alpha's reconciler: clusters/alpha/status.yaml is not signed by alpha (UnsignedChange: it is not the file alpha's reconciler signed (edited by hand?)), so status reads it as absent, as the reconcilers do; alpha's next pass rewrites it"
	if code, out, _ := gitpeer(t, "status", remote, "--exit-code"); code != 1 || !strings.Contains(out, want) {
		t.Errorf("status after a hand edit: exit %d, want 1 and\n%s\n%s", code, want, out)
	}
	converge(t, root, remote, "alpha")
	if code, out, _ := gitpeer(t, "status", remote, "--exit-code"); code != 0 {
		t.Errorf("status once alpha repaired it: exit %d\n%s", code, out)
	}
}
