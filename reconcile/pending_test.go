package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gitpeer/gitpeer/reconcile"
)

const oneSlice = `
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", slices: [{name: "web", resources: {cpu: "1"}}]}]
`

// pendingPass runs beta's pass on w's tree with pending as its unmerged
// proposal, without applying it.
func pendingPass(t *testing.T, w *world, pending fstest.MapFS) *reconcile.Output {
	t.Helper()
	in := reconcile.Input{Spec: w.spec, Tree: w.tree, Backend: w.backends["beta"], Now: w.now, Pins: w.pins["beta"]}
	if pending != nil {
		in.Pending = pending
	}
	out, err := reconcile.Pass(context.Background(), in)
	if err != nil {
		t.Fatalf("pass beta: %v", err)
	}
	return out
}

// proposal is tree with out's files written over it: the tree of the
// proposal a pass that computed out would make.
func proposal(tree fstest.MapFS, out *reconcile.Output) fstest.MapFS {
	p := fstest.MapFS{}
	for name, f := range tree {
		p[name] = f
	}
	for name, data := range out.Files {
		p[name] = &fstest.MapFile{Data: data}
	}
	return p
}

// TestAProviderTakesBackTheCertificatesOfItsPendingProposal: a provider
// whose answer to a Tenant and a slice request is proposed, not merged,
// answers the same on the next pass (a minute later, main unchanged): the
// Identity and the slice answer carry the certificates of the pending
// proposal, and nothing is signed again. A pending proposal whose
// certificates this provider's CA did not sign for the consumer's key gets
// none of them taken back.
func TestAProviderTakesBackTheCertificatesOfItsPendingProposal(t *testing.T) {
	const (
		identity = "clusters/alpha/inbox/beta/identity.yaml"
		answer   = "clusters/alpha/inbox/beta/resourceslice-web.status.yaml"
	)
	w := newWorld(t, oneSlice)
	w.pass("beta")
	w.pass("alpha")

	first := pendingPass(t, w, nil)
	if first.Files[identity] == nil || first.Files[answer] == nil || w.backends["beta"].signed != 2 {
		t.Fatalf("beta's answer: identity %t, slice answer %t, %d signed; want both, 2 signed", first.Files[identity] != nil, first.Files[answer] != nil, w.backends["beta"].signed)
	}
	w.now = w.now.Add(time.Minute)
	again := pendingPass(t, w, proposal(w.tree, first))
	if string(again.Files[identity]) != string(first.Files[identity]) || w.backends["beta"].signed != 2 {
		t.Errorf("the next pass on the same tree signed %d certificates; identity unchanged: %t", w.backends["beta"].signed-2, string(again.Files[identity]) == string(first.Files[identity]))
	}
	if mustCRT(t, again.Files[answer]) != mustCRT(t, first.Files[answer]) {
		t.Error("the next pass re-signed the slice's certificate")
	}
	// Without the pending proposal, as before: signed anew.
	pendingPass(t, w, nil)
	if w.backends["beta"].signed != 4 {
		t.Errorf("a pass without the pending proposal signed %d, want 2 more", w.backends["beta"].signed-2)
	}

	// Another world's answers (another CA, another consumer key) in the
	// pending proposal: verified, refused, signed anew.
	other := newWorld(t, oneSlice)
	other.pass("beta")
	other.pass("alpha")
	forged := proposal(w.tree, pendingPass(t, other, nil))
	signed := w.backends["beta"].signed
	out := pendingPass(t, w, forged)
	if w.backends["beta"].signed != signed+2 || string(out.Files[identity]) == string(forged[identity].Data) {
		t.Errorf("a pending proposal with certificates this CA did not sign: %d signed, want 2", w.backends["beta"].signed-signed)
	}
}

// mustCRT is the signedCRT line of a slice answer.
func mustCRT(t *testing.T, data []byte) string {
	t.Helper()
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "signedCRT:") {
			return line
		}
	}
	t.Fatalf("no signedCRT in\n%s", data)
	return ""
}
