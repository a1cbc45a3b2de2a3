package attack

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
)

// TestAnAttributeFilterShowsReviewersWhatTheReconcilersRead: a repo writer
// adds a slice to the spec on a line a smudge filter deletes from every
// checkout (.gitattributes "peering.cue filter=review", the driver
// configured in the reviewer's or the CI's Git), and makes every file under
// clusters/ CRLF in a checkout. A review tool reading the checkout would
// see the spec without the slice, and every signed file changed. Reading
// the commit from Git objects, as verify does, it sees the slice the
// reconcilers grant, and no unsigned change; verify names both rules.
func TestAnAttributeFilterShowsReviewersWhatTheReconcilersRead(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	a := w.writer()
	a.write(".gitattributes", []byte("peering.cue filter=review\nclusters/** eol=crlf ident\n"))
	a.edit("peering.cue", `	{name: "pool", resources: {cpu: "2"}},`, `	{name: "pool", resources: {cpu: "2"}},
	{name: "more", resources: {cpu: "1"}}, // HIDE`)
	attack := a.commit("mallory <mallory@example.com>", "tidy up")
	a.push()

	// The reviewer's checkout, with the driver configured.
	a.git("config", "filter.review.smudge", "sed /HIDE/d")
	a.git("config", "filter.review.clean", "cat")
	a.remove("peering.cue")
	a.remove("clusters")
	a.git("checkout", "--", ".")
	if strings.Contains(string(a.read("peering.cue")), "more") {
		t.Fatal("the smudge filter did not run: the test proves nothing")
	}
	if !bytes.Contains(a.read("clusters/beta/cluster.yaml"), []byte("\r\n")) {
		t.Fatal("eol=crlf did not apply: the test proves nothing")
	}

	// What the review tools read: the commit.
	tree, err := gitobj.OpenCommitTree(a.dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	file, data, err := schema.FindSpec(tree, a.dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, w.mustShow("peering.cue")) {
		t.Fatalf("the review reads another spec than the remote's:\n%s", data)
	}
	spec, err := schema.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(spec.Peerings[0].Slices, func(s schema.Slice) bool { return s.Name == "more" }) {
		t.Fatalf("the review does not see the slice the commit adds: %+v", spec.Peerings[0].Slices)
	}
	findings, err := verify.Check(a.dir, spec, verify.Options{Now: w.clock.Now(), History: true, RequireManifests: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Commit == "" && f.Reason != reasons.AttributesRewrite {
			t.Errorf("verify reads what is not in the commit: %s", f)
		}
	}
	mustFind(t, findings, ".gitattributes", reasons.AttributesRewrite, "")

	// The reconcilers act on the very spec the review saw.
	w.converge()
	w.mustBeReady("alpha", "beta")
	if _, ok := w.show("clusters/alpha/inbox/beta/resourceslice-more.status.yaml"); !ok {
		t.Errorf("beta did not answer the slice of commit %s that the review saw", attack[:12])
	}
}

// TestFilesThatChangeWhatACheckoutSeesAreNamed: a repo writer commits a
// .sourceignore at the root and in beta's tree (Flux would leave beta's
// kustomization.yaml out of its artifact), .gitmodules and a submodule
// entry, and a symbolic link. verify names each; the reconcilers go on,
// sign nothing for it, and beta's pass removes what nobody signed in its
// own tree.
func TestFilesThatChangeWhatACheckoutSeesAreNamed(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	before := w.signedAll()
	identity := w.mustShow(identityFile)

	a := w.writer()
	a.write(".sourceignore", []byte("clusters/beta/kustomization.yaml\n"))
	a.write("clusters/beta/.sourceignore", []byte("kustomization.yaml\n"))
	a.write(".gitmodules", []byte("[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = https://example.com/lib.git\n"))
	a.link("docs/spec.cue", "../peering.cue")
	if err := os.MkdirAll(a.path("vendor/lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	a.git("add", "-A")
	a.git("update-index", "--add", "--cacheinfo", "160000,"+a.git("rev-parse", "HEAD")+",vendor/lib")
	a.git("commit", "-q", "--author", "mallory <mallory@example.com>", "-m", "helpers")
	a.push()

	findings := w.verify()
	for _, want := range [][2]string{
		{".sourceignore", reasons.SourceIgnore},
		{"clusters/beta/.sourceignore", reasons.SourceIgnore},
		{".gitmodules", reasons.Submodule},
		{"vendor/lib", reasons.Submodule},
		{"docs/spec.cue", reasons.SymbolicLink},
	} {
		mustFind(t, findings, want[0], want[1], "")
	}

	w.converge()
	w.nothingSigned(before)
	w.mustBeReady("alpha", "beta")
	if got := w.mustShow(identityFile); !bytes.Equal(got, identity) {
		t.Error("alpha's Identity changed")
	}
	if out := w.lsTree("main", "clusters/beta/.sourceignore"); out != "" {
		t.Errorf("beta's pass kept the .sourceignore nobody signed in its tree: %s", out)
	}
	// What people wrote outside clusters/ stays, and stays named.
	findings = w.verify()
	mustFind(t, findings, ".sourceignore", reasons.SourceIgnore, "")
	mustFind(t, findings, "vendor/lib", reasons.Submodule, "")
}
