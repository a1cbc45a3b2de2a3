package runner

import (
	"testing"
	"testing/fstest"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// TestSealFilesUnderReview: with review, what main holds as computed is
// sealed; a file the pass changed keeps the bytes the newest seal applies
// until the change is merged; a file the pass adds waits; a file it no
// longer renders goes at once; the kustomization lists what is sealed; and
// the inbox and other clusters never are.
func TestSealFilesUnderReview(t *testing.T) {
	const (
		kust     = "clusters/beta/kustomization.yaml"
		merged   = "clusters/beta/liqo/alpha/namespace-liqo-tenant-alpha.yaml"
		renewed  = "clusters/beta/liqo/alpha/tenant-alpha.yaml"
		added    = "clusters/beta/liqo/gamma/tenant-gamma.yaml"
		revoked  = "clusters/beta/liqo/delta/rolebinding-delta.yaml"
		flux     = "clusters/beta/flux/secret-gitpeer-signing.yaml"
		inbox    = "clusters/beta/inbox/alpha/tenant.yaml"
		theirs   = "clusters/alpha/inbox/beta/identity.yaml"
		status   = "clusters/beta/status.yaml"
		rendered = "rendered\n"
	)
	computed := map[string][]byte{
		merged: []byte("ns\n"), renewed: []byte("tenant v2\n"), added: []byte("gamma\n"),
		flux: []byte("keys v2\n"), inbox: []byte("x\n"), theirs: []byte("id\n"), status: []byte("status v2\n"),
		kust: []byte(rendered),
	}
	tip := fstest.MapFS{
		merged: {Data: []byte("ns\n")}, renewed: {Data: []byte("tenant v1\n")}, revoked: {Data: []byte("rb\n")},
		flux: {Data: []byte("keys v1\n")}, status: {Data: []byte("status v1\n")}, kust: {Data: []byte("old\n")},
	}
	applied := fstest.MapFS{
		merged: {Data: []byte("ns\n")}, renewed: {Data: []byte("tenant v1\n")}, revoked: {Data: []byte("rb\n")},
		status: {Data: []byte("status v1\n")},
	}
	seal, err := sealFiles("beta", computed, tip, applied, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		merged: "ns\n", renewed: "tenant v1\n", flux: "keys v2\n", status: "status v1\n",
	}
	k, err := layout.Kustomization([]string{"liqo/alpha/namespace-liqo-tenant-alpha.yaml", "liqo/alpha/tenant-alpha.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	want[kust] = string(k)
	if len(seal) != len(want) {
		t.Errorf("sealed %d files, want %d: %q", len(seal), len(want), keys(seal))
	}
	for name, data := range want {
		if got, ok := seal[name]; !ok || string(got) != data {
			t.Errorf("%s: sealed %q (%t), want %q", name, got, ok, data)
		}
	}

	// Without a newest seal in the clone, a changed file waits too.
	seal, err = sealFiles("beta", computed, tip, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := seal[renewed]; ok {
		t.Errorf("with no seal to keep it from, the unmerged %s was sealed", renewed)
	}

	// Without review, the seal is the pass's own tree, less the inbox.
	seal, err = sealFiles("beta", computed, tip, applied, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{merged, renewed, added, flux, status, kust} {
		if string(seal[name]) != string(computed[name]) {
			t.Errorf("without review, %s: sealed %q, want %q", name, seal[name], computed[name])
		}
	}
	for _, name := range []string{inbox, theirs, revoked} {
		if _, ok := seal[name]; ok {
			t.Errorf("without review, %s was sealed", name)
		}
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
