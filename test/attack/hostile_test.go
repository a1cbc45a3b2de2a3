package attack

import (
	"crypto/x509"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/trust/guard"
)

// hubSpec: beta provides for alpha and for gamma.
const hubSpec = `clusters: [{id: "alpha"}, {id: "gamma"}, {id: "beta"}]
peerings: [
	{consumer: "alpha", provider: "beta", slices: [{name: "pool", resources: {cpu: "1"}}]},
	{consumer: "gamma", provider: "beta", slices: [{name: "web", resources: {cpu: "1"}}]},
]
`

// TestAHostilePeerCannotStallItsProvider: alpha, holding its own key (a
// compromised or hostile peer), signs into beta's inbox a slice request
// carrying a PEM private key in its annotations (which beta's answer
// echoes), one whose class is a base64 private key (which a denial
// quotes), one whose name is (which a refusal quotes), and a Tenant that
// is a symbolic link to beta's own private key. beta's pass succeeds and
// commits no private material (guard.ScanHistory over every blob of every
// commit finds only alpha's), alpha's peering is PeerContentRefused with
// what was accepted before kept, and gamma's stays Ready.
func TestAHostilePeerCannotStallItsProvider(t *testing.T) {
	t.Parallel()
	w := settled(t, hubSpec)
	identity := w.mustShow(identityFile)
	before := w.signedAll()
	alpha := w.clusters["alpha"].b.Signer()

	key, _ := handshake.GenerateKey()
	pemKey, err := handshake.MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b64Key := base64.StdEncoding.EncodeToString(der)
	request := func(name, class string) *authv1beta1.ResourceSlice {
		csr, err := handshake.ResourceSliceCSR(alpha, name, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		return liqo.ResourceSlice(name, "alpha", "beta", class, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, true, csr)
	}

	hostile := w.attack("gitpeer (alpha) <alpha@gitpeer.invalid>", "alpha: request slices from beta\n\nGitpeer-Cluster: alpha\n", func(a *writer) {
		pool, err := artifact.DecodeSlice(poolRequest, a.read(poolRequest))
		if err != nil {
			t.Fatal(err)
		}
		pool.Annotations["note"] = string(pemKey)
		a.write(poolRequest, encode(t, pool))
		a.write("clusters/beta/inbox/alpha/resourceslice-evil.yaml", encode(t, request("evil", b64Key)))
		odd := request("odd", "")
		odd.Name = b64Key
		a.write("clusters/beta/inbox/alpha/resourceslice-odd.yaml", encode(t, odd))
		a.resign(alpha, "alpha", "clusters/beta/inbox/alpha")
		a.link(tenantFile, filepath.Join(w.clusters["beta"].state, "cluster.key"))
	})

	w.pass("beta")
	w.pass("gamma")
	w.pass("beta")
	w.nothingSigned(before)
	ps := w.peering("beta", "alpha", "beta")
	if stalled(ps) != reasons.PeerContentRefused {
		t.Fatalf("beta's view of alpha: %s\nwant Stalled PeerContentRefused", describe(ps))
	}
	if got := w.mustShow(identityFile); string(got) != string(identity) {
		t.Fatal("beta changed or withdrew alpha's Identity")
	}
	w.mustBeReady("gamma", "beta")

	// Every blob of history: the keys are those alpha put in its own
	// directory, first committed by alpha's commit; nothing any reconciler
	// committed holds private material.
	findings, err := guard.ScanHistory(w.remote)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 3 {
		t.Errorf("guard.ScanHistory found %d blobs, want alpha's 3: %v", len(findings), findings)
	}
	for _, f := range findings {
		if f.Commit != hostile || !strings.HasPrefix(f.Path, "clusters/beta/inbox/alpha/") {
			t.Errorf("private material outside alpha's commit %s: %s", hostile[:12], f)
		}
	}
	if n := w.reconcilerCommitsClean(); n == 0 {
		t.Fatal("no reconciler commit checked")
	}
	// verify scans the whole tree, and with --history every commit.
	vf := w.verify()
	mustFind(t, vf, poolRequest, reasons.PrivateMaterial, "")
	mustFind(t, vf, poolRequest, reasons.PrivateMaterial, hostile)
	mustFind(t, vf, "clusters/beta/inbox/alpha/resourceslice-evil.yaml", reasons.PrivateMaterial, hostile)
}
