package reconcile_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

const crb = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: evil\n"

// unexpectedOf is the UnexpectedArtifacts condition of cluster's status of
// the peering, nil when there is none.
func unexpectedOf(w *world, cluster, consumer, provider string) *metav1.Condition {
	w.t.Helper()
	ps := w.status(cluster, consumer, provider)
	if ps == nil {
		w.t.Fatalf("%s has no status for %s → %s", cluster, consumer, provider)
	}
	return condition(ps, reconcile.ConditionUnexpectedArtifacts)
}

// mustReportUnexpected fails unless cluster's status of the peering is
// Ready and reports UnexpectedArtifact naming every one of files.
func mustReportUnexpected(t *testing.T, w *world, cluster, consumer, provider string, files ...string) {
	t.Helper()
	ps := w.status(cluster, consumer, provider)
	if r := condition(ps, meta.ReadyCondition); r == nil || r.Status != metav1.ConditionTrue {
		t.Fatalf("%s's view of %s → %s is not Ready: %+v", cluster, consumer, provider, ps.Conditions)
	}
	c := condition(ps, reconcile.ConditionUnexpectedArtifacts)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reasons.UnexpectedArtifact {
		t.Fatalf("%s's view of %s → %s reports no UnexpectedArtifact: %+v", cluster, consumer, provider, ps.Conditions)
	}
	for _, f := range files {
		if !strings.Contains(c.Message, f) {
			t.Errorf("%s's UnexpectedArtifact does not name %s: %s", cluster, f, c.Message)
		}
	}
}

// TestAnythingButArtifactsInAnInboxIsIgnoredAndNamed: a repo writer plants
// an unsigned ClusterRoleBinding in alpha's inbox at beta, and alpha (a
// hostile consumer, with its own key) signs one, and a Tenant in a
// subfolder, into its folder of beta's inbox. Each reader stays Ready,
// signs nothing, renders none of it and names every file with
// UnexpectedArtifact; once the folders' writers have withdrawn them, the
// condition goes.
func TestAnythingButArtifactsInAnInboxIsIgnoredAndNamed(t *testing.T) {
	w := settled(t)
	identity := w.tree[identityFile].Data
	signed := w.backends["beta"].signed
	planted := "clusters/alpha/inbox/beta/clusterrolebinding-evil.yaml"
	hostile := "clusters/beta/inbox/alpha/clusterrolebinding-evil.yaml"
	nested := "clusters/beta/inbox/alpha/sub/tenant.yaml"
	w.tree[planted] = &fstest.MapFile{Data: []byte(crb)}
	w.tree[hostile] = &fstest.MapFile{Data: []byte(crb)}
	w.tree[nested] = &fstest.MapFile{Data: w.tree["clusters/beta/inbox/alpha/tenant.yaml"].Data}
	w.resign("alpha", hostile)

	_, plan := w.pass("beta")
	if !strings.Contains(plan.Message, "remove clusterrolebinding-evil.yaml from the inbox of alpha") {
		t.Errorf("beta's commit does not say it removed the planted file: %q", plan.Message)
	}
	mustReportUnexpected(t, w, "beta", "alpha", "beta", hostile, nested)
	if c := unexpectedOf(w, "beta", "alpha", "beta"); !strings.Contains(c.Message, "not artifacts alpha sends as beta's consumer (tenant.yaml, resourceslice-<name>.yaml)") {
		t.Errorf("beta's UnexpectedArtifact does not say what alpha sends: %s", c.Message)
	}
	if got := w.backends["beta"].signed; got != signed {
		t.Fatalf("beta signed %d certificates", got-signed)
	}
	if string(w.tree[identityFile].Data) != string(identity) {
		t.Fatal("beta changed or withdrew alpha's Identity")
	}
	// beta's own folder in alpha's inbox is beta's to keep clean.
	if w.has(planted) {
		t.Fatalf("beta's pass left %s", planted)
	}

	w.tree[planted] = &fstest.MapFile{Data: []byte(crb)}
	w.pass("alpha")
	mustReportUnexpected(t, w, "alpha", "alpha", "beta", planted)
	for _, id := range []string{"alpha", "beta"} {
		kust := string(w.tree[layout.ClusterPath(id, layout.KustomizationFile)].Data)
		if strings.Contains(kust, "evil") || strings.Contains(kust, "inbox") {
			t.Errorf("%s's kustomization applies a planted file:\n%s", id, kust)
		}
		for p, f := range w.tree {
			if strings.HasPrefix(p, layout.ClusterPath(id, layout.LiqoDir)+"/") && strings.Contains(string(f.Data), "name: evil") {
				t.Errorf("%s renders the planted binding in %s", id, p)
			}
		}
	}
	// alpha withdrew what it does not send; beta withdraws the plant.
	for _, f := range []string{hostile, nested} {
		if w.has(f) {
			t.Errorf("alpha's pass left %s in its folder", f)
		}
	}
	w.converge("beta", "alpha")
	for _, id := range []string{"alpha", "beta"} {
		if c := unexpectedOf(w, id, "alpha", "beta"); c != nil {
			t.Errorf("%s still reports %s after the inboxes were cleaned: %+v", id, reconcile.ConditionUnexpectedArtifacts, c)
		}
	}
	w.mustBeReadyBothSides("alpha", "beta")
}

// TestUnexpectedArtifactNamesABoundedNumberOfFiles: thousands of planted
// files do not bloat status.yaml: it names the first few and counts the
// rest.
func TestUnexpectedArtifactNamesABoundedNumberOfFiles(t *testing.T) {
	w := settled(t)
	for i := range 20 {
		w.tree[fmt.Sprintf("clusters/alpha/inbox/beta/junk-%02d.yaml", i)] = &fstest.MapFile{Data: []byte(crb)}
	}
	w.pass("alpha")
	c := unexpectedOf(w, "alpha", "alpha", "beta")
	if c == nil {
		t.Fatal("no UnexpectedArtifacts condition")
	}
	if !strings.Contains(c.Message, "junk-00.yaml") || strings.Contains(c.Message, "junk-19.yaml") || !strings.Contains(c.Message, "and 12 more") {
		t.Errorf("message does not name the first 8 files and count the other 12: %s", c.Message)
	}
}

// TestArtifactsOfBothPartsAreExpected: when two clusters peer both ways,
// each writes the artifacts of both parts into the other's inbox, none of
// them unexpected; when the spec drops one direction, what the provider
// sent for it is not unexpected either while it stands (a pull request
// removing a peering is no finding), and the handshake of the other
// direction goes on.
func TestArtifactsOfBothPartsAreExpected(t *testing.T) {
	w := newWorld(t, `
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [
	{consumer: "alpha", provider: "beta", slices: [{name: "a", resources: {cpu: "1"}}]},
	{consumer: "beta", provider: "alpha", slices: [{name: "b", resources: {cpu: "1"}}]},
]
`)
	w.converge("beta", "alpha")
	for _, id := range []string{"alpha", "beta"} {
		for _, pr := range []schema.Pair{{Consumer: "alpha", Provider: "beta"}, {Consumer: "beta", Provider: "alpha"}} {
			if c := unexpectedOf(w, id, pr.Consumer, pr.Provider); c != nil {
				t.Errorf("%s's view of %s → %s: %+v", id, pr.Consumer, pr.Provider, c)
			}
		}
	}
	w.setSpec(`
clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "beta", provider: "alpha", slices: [{name: "b", resources: {cpu: "1"}}]}]
`)
	// alpha reads its inbox at beta before beta withdrew its nonce and
	// Identity for alpha.
	w.pass("alpha")
	if c := unexpectedOf(w, "alpha", "beta", "alpha"); c != nil {
		t.Errorf("alpha reports what beta has yet to withdraw: %+v", c)
	}
	w.converge("beta", "alpha")
	if c := unexpectedOf(w, "alpha", "beta", "alpha"); c != nil {
		t.Errorf("alpha's view of beta → alpha after the revocation: %+v", c)
	}
	w.mustBeReadyBothSides("beta", "alpha")
}

// mustBeReadyBothSides fails unless both sides report the peering Ready.
func (w *world) mustBeReadyBothSides(consumer, provider string) {
	w.t.Helper()
	for _, id := range []string{consumer, provider} {
		if r := condition(w.status(id, consumer, provider), meta.ReadyCondition); r == nil || r.Status != metav1.ConditionTrue {
			w.t.Fatalf("%s's view of %s → %s is not Ready: %+v", id, consumer, provider, r)
		}
	}
}

// TestAnArtifactOfAPartTheSpecDroppedIsNotCarried: alpha consumed from
// beta; the spec turns the peering around (beta consumes from alpha) while
// beta's cluster.yaml carries another key (KeyChanged), so alpha carries
// over what it wrote for beta instead of computing it. Its Tenant for beta,
// an artifact of the part alpha no longer plays, is withdrawn rather than
// carried (a pass that wrote it would fail on the inbox rule): alpha's
// pass succeeds, and beta's peering there is KeyChanged.
func TestAnArtifactOfAPartTheSpecDroppedIsNotCarried(t *testing.T) {
	w := settled(t)
	tenant := "clusters/beta/inbox/alpha/tenant.yaml"
	if !w.has(tenant) {
		t.Fatalf("no %s to start from", tenant)
	}
	w.setSpec(`clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "beta", provider: "alpha"}]`)
	evil, _, err := file.Init(t.TempDir()+"/evil", file.InitOptions{ClusterID: "beta", APIServer: "https://beta.example:6443", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := evil.ClusterInfo()
	data, _ := info.Encode()
	w.tree["clusters/beta/cluster.yaml"] = &fstest.MapFile{Data: data}

	w.pass("alpha")
	if w.has(tenant) {
		t.Errorf("alpha carried over %s, which it no longer sends", tenant)
	}
	if st := condition(w.status("alpha", "beta", "alpha"), meta.StalledCondition); st == nil || st.Reason != reasons.KeyChanged {
		t.Fatalf("alpha's view of beta → alpha: %+v, want Stalled KeyChanged", st)
	}
}
