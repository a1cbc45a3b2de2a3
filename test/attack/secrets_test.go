package attack

import (
	"sort"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
)

const (
	leakedKey        = "docs/leaked-key.pem"
	leakedKubeconfig = "docs/alpha.kubeconfig"
)

// TestSecretsCommittedByHumansAreFoundNotSpread: someone commits a private
// key under docs/, and alpha's kubeconfig (with its client key), deleted
// in the next commit so that it is only in history. The reconcilers go on
// unaffected (their guard checks what they write, not what others wrote):
// a new slice in the spec converges, no reconciler commit carries private
// material, and docs/ is left alone. guard.ScanHistory finds both, each in
// the commit that brought it.
func TestSecretsCommittedByHumansAreFoundNotSpread(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	key, _ := handshake.GenerateKey()
	pemKey, err := handshake.MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := w.kubeconfig("alpha", "beta")

	keyCommit := w.attack("admin <admin@example.com>", "docs: how to sign by hand", func(a *writer) {
		a.write(leakedKey, pemKey)
	})
	a := w.writer()
	a.write(leakedKubeconfig, kubeconfig)
	kubeconfigCommit := a.commit("admin <admin@example.com>", "docs: example kubeconfig")
	a.remove(leakedKubeconfig)
	a.commit("admin <admin@example.com>", "docs: remove the kubeconfig")
	a.push()

	before := w.ref("main")
	w.editSpec(`{name: "big", resources: {cpu: "64"}}`, `{name: "big", resources: {cpu: "64"}}, {name: "more", resources: {cpu: "1"}}`, "alpha: one more slice")
	w.converge()
	w.mustBeReady("alpha", "beta")
	if s := sliceOf(w.peering("alpha", "alpha", "beta"), "more"); s.Resources != "Accepted" {
		t.Fatalf("the new slice did not converge: %+v", s)
	}
	if n := strings.Count(w.git("log", "--format=%H", before+"..main", "--grep", "^Gitpeer-Cluster: "), "\n"); n < 2 {
		t.Fatalf("the reconcilers made %d commits after the secrets", n)
	}
	if _, ok := w.show(leakedKey); !ok {
		t.Fatal("a reconciler deleted a file outside its tree")
	}
	if n := w.reconcilerCommitsClean(); n == 0 {
		t.Fatal("no reconciler commit checked")
	}

	findings, err := guard.ScanHistory(w.remote)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range findings {
		got = append(got, f.Commit+" "+f.Path)
	}
	sort.Strings(got)
	want := []string{keyCommit + " " + leakedKey, kubeconfigCommit + " " + leakedKubeconfig}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("guard.ScanHistory found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// verify scans the whole tree, and with --history every commit.
	vf := w.verify()
	mustFind(t, vf, leakedKey, reasons.PrivateMaterial, "")
	mustFind(t, vf, leakedKey, reasons.PrivateMaterial, keyCommit)
	mustFind(t, vf, leakedKubeconfig, reasons.PrivateMaterial, kubeconfigCommit)
}
