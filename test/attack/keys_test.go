package attack

import (
	"bytes"
	"context"
	"crypto"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
)

const (
	alphaCluster    = "clusters/alpha/cluster.yaml"
	betaCluster     = "clusters/beta/cluster.yaml"
	identityFile    = "clusters/alpha/inbox/beta/identity.yaml"
	nonceFile       = "clusters/alpha/inbox/beta/nonce.yaml"
	tenantFile      = "clusters/beta/inbox/alpha/tenant.yaml"
	acceptedTenant  = "clusters/beta/liqo/alpha/tenant-alpha.yaml"
	renderedIdentiy = "clusters/alpha/liqo/beta/identity-controlplane-beta.yaml"
)

// impostor is a state directory of the attacker's, for cluster id: a key
// and a CA nobody pinned.
func impostor(t *testing.T, id, apiServer string) *file.Backend {
	t.Helper()
	b, _, err := file.Init(filepath.Join(t.TempDir(), "impostor-"+id), file.InitOptions{ClusterID: id, APIServer: apiServer, Now: start})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encode(t *testing.T, obj any) []byte {
	t.Helper()
	data, err := liqo.Encode(obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// forgedTenant is a Tenant of consumer answering the nonce in a's clone
// with key: what whoever holds key would send to get a certificate for it.
func forgedTenant(t *testing.T, a *writer, consumer, provider string, key crypto.Signer) []byte {
	t.Helper()
	file := layout.InboxPath(consumer, provider, layout.NonceFile)
	nonce, err := artifact.ParseNonce(file, a.read(file), consumer)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := handshake.SignNonce(key, nonce.Value)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := handshake.ControlPlaneCSR(key, consumer)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := handshake.MarshalPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return encode(t, artifact.NewTenant(consumer, nonce, pub, csr, sig))
}

// TestASwappedConsumerKeyGetsNoCertificate: a writer publishes its own key
// as alpha's, signs alpha's directories with it and answers beta's nonce
// with a Tenant for it: with and without also editing the spec's
// fingerprint, with a "rotation statement" it signed itself or with
// another key of its own, and with a forged re-pin committed into the repo.
// beta (the provider) refuses with KeyChanged, signs nothing and keeps the
// working Identity. alpha's own reconciler, whose pin store records the
// manifests it signed there, publishes its cluster.yaml again from its
// backend and signs its directories over the attack; the peering settles
// again without beta signing anything.
func TestASwappedConsumerKeyGetsNoCertificate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		extra func(t *testing.T, a *writer, evil *file.Backend, info *layout.ClusterInfo)
	}{
		{"key only", nil},
		{"key and the spec's fingerprint", func(t *testing.T, a *writer, _ *file.Backend, info *layout.ClusterInfo) {
			a.edit("peering.cue", `{id: "alpha"}`, `{id: "alpha", fingerprint: "`+info.Fingerprint+`"}`)
		}},
		{"key with a rotation statement it signed itself", func(t *testing.T, a *writer, evil *file.Backend, info *layout.ClusterInfo) {
			if err := layout.SignRotation(info, evil.Signer()); err != nil {
				t.Fatal(err)
			}
		}},
		{"key with a rotation statement signed by another key", func(t *testing.T, a *writer, _ *file.Backend, info *layout.ClusterInfo) {
			other, _ := handshake.GenerateKey()
			if err := layout.SignRotation(info, other); err != nil {
				t.Fatal(err)
			}
		}},
		{"key with a forged re-pin committed into the repo", func(t *testing.T, a *writer, _ *file.Backend, info *layout.ClusterInfo) {
			forged := pins.New("beta")
			p := forged.Peer("alpha")
			p.Repin, p.Fingerprint = true, info.Fingerprint
			data, err := forged.Encode()
			if err != nil {
				t.Fatal(err)
			}
			a.write("pins.yaml", data)
			a.write("clusters/beta/pins.yaml", data)
		}},
		{"key with a forged record of beta's re-pin (repins.yaml) in beta's directory", func(t *testing.T, a *writer, _ *file.Backend, info *layout.ClusterInfo) {
			r := &layout.Repins{APIVersion: layout.APIVersion, Kind: layout.RepinsKind, ClusterID: "beta",
				Peers: []layout.RepinnedPeer{{Peer: "alpha", Fingerprints: []string{info.Fingerprint}}}}
			data, err := r.Encode()
			if err != nil {
				t.Fatal(err)
			}
			a.write(layout.ClusterPath("beta", layout.RepinsFile), data)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, twoSpec)
			identity := w.mustShow(identityFile)
			tenant := w.mustShow(acceptedTenant)
			kubeconfig := w.kubeconfig("alpha", "beta")
			published := w.mustShow(alphaCluster)
			before := w.signedAll()

			evil := impostor(t, "alpha", "https://alpha.gitpeer.test:6443")
			attack := w.attack("gitpeer (alpha) <alpha@gitpeer.invalid>", "alpha: publish cluster identity\n\nGitpeer-Cluster: alpha\n", func(a *writer) {
				info, err := evil.ClusterInfo()
				if err != nil {
					t.Fatal(err)
				}
				if tc.extra != nil {
					tc.extra(t, a, evil, info)
				}
				data, err := info.Encode()
				if err != nil {
					t.Fatal(err)
				}
				a.write(alphaCluster, data)
				a.resign(evil.Signer(), "alpha", "clusters/alpha")
				a.write(tenantFile, forgedTenant(t, a, "alpha", "beta", evil.Signer()))
				a.resign(evil.Signer(), "alpha", "clusters/beta/inbox/alpha")
			})

			mustFind(t, w.verify(), alphaCluster, reasons.KeyChanged, attack)
			w.pass("beta")
			w.nothingSigned(before)
			// Nothing beta signed vouches for the key: it stays a finding.
			mustFind(t, w.verify(), alphaCluster, reasons.KeyChanged, attack)
			ps := w.peering("beta", "alpha", "beta")
			if reason := stalled(ps); reason != reasons.KeyChanged {
				t.Fatalf("beta's status: %s\nwant Stalled KeyChanged", describe(ps))
			}
			assertContains(t, "beta's status", describe(ps), alphaCluster, "gitpeer trust --peer alpha")
			if got := w.mustShow(identityFile); string(got) != string(identity) {
				t.Fatal("beta changed or withdrew alpha's working Identity")
			}
			if got := w.mustShow(acceptedTenant); string(got) != string(tenant) {
				t.Fatal("beta changed the Tenant it accepted")
			}
			if _, ok := w.show("clusters/beta/pins.yaml"); ok {
				t.Fatal("a pins.yaml planted in beta's tree survived beta's pass")
			}

			// alpha's reconciler never signs a cluster.yaml with another
			// key: it publishes its own again, from its backend.
			w.mustRepublish("alpha", published)
			if string(w.kubeconfig("alpha", "beta")) != string(kubeconfig) {
				t.Fatal("alpha's kubeconfig changed")
			}

			// The admins restore the spec (the one part of the attack a
			// reconciler cannot repair); everything settles as before,
			// and nothing was signed for it.
			a := w.writer()
			a.git("checkout", attack+"^", "--", "peering.cue")
			if a.git("status", "--porcelain") != "" {
				a.commit("admin <admin@example.com>", "spec: restore alpha's fingerprint")
				a.push()
			}
			w.converge()
			w.mustBeReady("alpha", "beta")
			w.nothingSigned(before)
			if got := w.mustShow(identityFile); string(got) != string(identity) {
				t.Fatal("the Identity changed after the revert")
			}
		})
	}
}

// TestASwappedProviderKeyCAOrAPIServerIsRefusedByTheConsumer: a writer
// changes beta's key (signing beta's directories and an Identity for
// alpha's CSR with its own key and CA), beta's CA, or beta's API server.
// alpha (the consumer) refuses with KeyChanged and keeps its rendered
// Identity and its kubeconfig on disk; beta's own reconciler never vouches
// for a cluster.yaml it did not publish: it publishes its own again, and
// the peering settles.
func TestASwappedProviderKeyCAOrAPIServerIsRefusedByTheConsumer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, w *world, a *writer)
	}{
		{"key, CA and API server, with everything re-signed", func(t *testing.T, w *world, a *writer) {
			evil := impostor(t, "beta", "https://evil.example:6443")
			info, _ := evil.ClusterInfo()
			data, _ := info.Encode()
			a.write(betaCluster, data)
			a.resign(evil.Signer(), "beta", "clusters/beta")
			tn, err := artifact.DecodeTenant(tenantFile, a.read(tenantFile))
			if err != nil {
				t.Fatal(err)
			}
			crt, err := evil.SignCSR(ctx, tn.Spec.CSR, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			id := liqo.ControlPlaneIdentity("alpha", "beta", authv1beta1.AuthParams{APIServer: info.APIServer, CA: evil.CABundle(), SignedCRT: crt})
			a.write(identityFile, encode(t, id))
			a.resign(evil.Signer(), "beta", "clusters/alpha/inbox/beta")
		}},
		{"CA", func(t *testing.T, w *world, a *writer) {
			evil := impostor(t, "beta", "https://beta.gitpeer.test:6443")
			ci, err := layout.ParseClusterInfo(betaCluster, "beta", a.read(betaCluster))
			if err != nil {
				t.Fatal(err)
			}
			ci.CA = string(evil.CABundle())
			data, _ := ci.Encode()
			a.write(betaCluster, data)
		}},
		{"API server", func(t *testing.T, w *world, a *writer) {
			a.edit(betaCluster, "https://beta.gitpeer.test:6443", "https://evil.example:6443")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := settled(t, twoSpec)
			rendered := w.mustShow(renderedIdentiy)
			identity := w.mustShow(identityFile)
			kubeconfig := w.kubeconfig("alpha", "beta")
			published := w.mustShow(betaCluster)
			before := w.signedAll()
			attack := w.attack("mallory <mallory@example.com>", "beta: new endpoint", func(a *writer) { tc.change(t, w, a) })
			mustFind(t, w.verify(), betaCluster, reasons.KeyChanged, attack)

			w.pass("alpha")
			ps := w.peering("alpha", "alpha", "beta")
			if reason := stalled(ps); reason != reasons.KeyChanged {
				t.Fatalf("alpha's status: %s\nwant Stalled KeyChanged", describe(ps))
			}
			assertContains(t, "alpha's status", describe(ps), betaCluster)
			if got := w.mustShow(renderedIdentiy); string(got) != string(rendered) {
				t.Fatal("alpha changed its rendered Identity")
			}
			if string(w.kubeconfig("alpha", "beta")) != string(kubeconfig) {
				t.Fatal("alpha's kubeconfig changed on disk")
			}

			// beta never vouches for the edit: it publishes its own
			// cluster.yaml again from its backend and signs its
			// directories over the attack.
			w.mustRepublish("beta", published)
			if tc.name != "key, CA and API server, with everything re-signed" {
				// Only the file was edited: beta's outbox still holds what it
				// signed, and nothing is signed anew.
				w.nothingSigned(before)
				if got := w.mustShow(identityFile); string(got) != string(identity) {
					t.Fatal("beta re-issued alpha's Identity")
				}
			}
			w.converge()
			w.mustBeReady("alpha", "beta")
			if tc.name != "key, CA and API server, with everything re-signed" {
				if got := w.mustShow(renderedIdentiy); string(got) != string(rendered) {
					t.Fatal("alpha changed its rendered Identity")
				}
			}
		})
	}
}

// mustRepublish runs a pass of cluster id, which must publish its own
// cluster.yaml again (published, what it published before an edit it did
// not sign), name that step in its commit, and seal it.
func (w *world) mustRepublish(id string, published []byte) {
	w.t.Helper()
	file := layout.ClusterPath(id, layout.ClusterFile)
	res := w.pass(id)
	if got := w.mustShow(file); !bytes.Equal(got, published) {
		w.t.Fatalf("after %s's pass its cluster.yaml is\n%s\nnot the one it published\n%s", id, got, published)
	}
	assertContains(w.t, id+"'s commit", res.Message, "republish "+id+"'s cluster.yaml over an edit it did not sign")
	if got, _ := w.showAt(w.ref(layout.AppliedBranch(id)), file); !bytes.Equal(got, published) {
		w.t.Fatalf("%s's applied branch holds the cluster.yaml\n%s", id, got)
	}
}

// rotateKey rotates cluster id's key as a rollover's switch does (a staged
// key promoted in its backend), and commits, as an admin, a cluster.yaml
// with a rotation statement signed by signer (the old key, for a genuine
// rotation): what peers meet, whoever publishes it.
func (w *world) rotateKey(id string, sign func(old crypto.Signer) crypto.Signer) *layout.ClusterInfo {
	w.t.Helper()
	c := w.clusters[id]
	if _, err := c.b.StageKey(context.Background(), ""); err != nil {
		w.t.Fatal(err)
	}
	old, err := c.b.PromoteNextKey(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	info, err := c.b.ClusterInfo()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := layout.SignRotation(info, sign(old)); err != nil {
		w.t.Fatal(err)
	}
	data, err := info.Encode()
	if err != nil {
		w.t.Fatal(err)
	}
	w.attack(id+" admin <admin@"+id+".example>", "rotate "+id+"'s key", func(a *writer) {
		a.write(layout.ClusterPath(id, layout.ClusterFile), data)
		a.resign(c.b.Signer(), id, layout.ClusterPath(id))
	})
	c.keys = append(c.keys, c.b.Signer().Public())
	if err := w.openRunner(c); err != nil {
		w.t.Fatal(err)
	}
	return info
}

// TestARotationSignedByThePinnedKeyIsFollowed: alpha rotates its key with
// a statement signed by the old one; beta follows without any admin, pins
// the new key and issues an Identity for it; alpha's applied branch is then
// signed by the new key.
func TestARotationSignedByThePinnedKeyIsFollowed(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	oldKubeconfig := w.kubeconfig("alpha", "beta")
	info := w.rotateKey("alpha", func(old crypto.Signer) crypto.Signer { return old })
	w.converge()
	w.mustBeReady("alpha", "beta")
	store, err := w.clusters["beta"].b.LoadPins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := store.Lookup("alpha").Fingerprint; got != info.Fingerprint {
		t.Fatalf("beta pins %s, want the rotated %s", got, info.Fingerprint)
	}
	id, err := artifact.DecodeIdentity(identityFile, w.mustShow(identityFile))
	if err != nil {
		t.Fatal(err)
	}
	_, der, _ := handshake.ParsePublicKey([]byte(info.PublicKey))
	if err := handshake.VerifyClientCertificate(id.Spec.AuthParams.SignedCRT, w.clusters["beta"].b.CABundle(), der, "alpha", handshake.ControlPlaneOrganization, w.clock.Now()); err != nil {
		t.Fatalf("the Identity is not for alpha's new key: %v", err)
	}
	if string(w.kubeconfig("alpha", "beta")) == string(oldKubeconfig) {
		t.Fatal("alpha kept the kubeconfig of its old key")
	}
	// A genuine rotation is no finding for verify either.
	if findings := w.verify(); len(findings) > 0 {
		t.Fatalf("verify after a signed rotation: %v", findings)
	}
}

// TestAKeyChangeWithoutAStatementNeedsALocalRepin: alpha lost its state and
// publishes a new key without a statement (as gitpeer init on a new state
// dir does). beta refuses it with KeyChanged until its admin re-pins
// locally (gitpeer trust: Repin in beta's pin store), and a re-pin naming
// another fingerprint still refuses it.
func TestAKeyChangeWithoutAStatementNeedsALocalRepin(t *testing.T) {
	t.Parallel()
	w := settled(t, twoSpec)
	// Some time later (a new state signs manifest sequences from its clock
	// on: beta has seen alpha's old ones), alpha has lost its state dir.
	w.clock.Advance(time.Hour)
	info := w.loseState(t, "alpha")
	before := w.signedAll()
	repin := func(fp string) {
		t.Helper()
		keeper := w.clusters["beta"].b
		store, err := keeper.LoadPins(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p := store.Peer("alpha")
		p.Repin, p.Fingerprint = true, fp
		if err := keeper.SavePins(ctx, store); err != nil {
			t.Fatal(err)
		}
	}

	mustFind(t, w.verify(), alphaCluster, reasons.KeyChanged, w.ref("main"))
	w.pass("beta")
	if ps := w.peering("beta", "alpha", "beta"); stalled(ps) != reasons.KeyChanged {
		t.Fatalf("beta's status: %s\nwant Stalled KeyChanged", describe(ps))
	}
	wrong, _ := handshake.GenerateKey()
	wrongFP, _ := handshake.Fingerprint(wrong.Public())
	repin(wrongFP)
	w.pass("beta")
	if ps := w.peering("beta", "alpha", "beta"); stalled(ps) != reasons.KeyChanged || !strings.Contains(describe(ps), wrongFP) {
		t.Fatalf("beta's status after a re-pin of another key: %s\nwant Stalled KeyChanged naming %s", describe(ps), wrongFP)
	}
	w.nothingSigned(before)

	repin(info.Fingerprint)
	w.converge()
	w.mustBeReady("alpha", "beta")
	store, _ := w.clusters["beta"].b.LoadPins(ctx)
	if p := store.Lookup("alpha"); p.Fingerprint != info.Fingerprint || p.Repin {
		t.Fatalf("beta's pin after the re-pin: %+v", p)
	}
}

// loseState replaces cluster id's state with a new one, as gitpeer init on
// an empty state dir makes after the old one was lost: a new key, published
// in a cluster.yaml with no rotation statement. It returns that cluster.yaml.
func (w *world) loseState(t *testing.T, id string) *layout.ClusterInfo {
	t.Helper()
	c := w.clusters[id]
	b, _, err := file.Init(filepath.Join(w.dir, "state", id+"-new"), file.InitOptions{ClusterID: id, APIServer: "https://" + id + ".gitpeer.test:6443", Now: w.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	b.Now = w.clock.Now
	c.b, c.state = &counting{Backend: b}, b.Dir()
	c.keys = append(c.keys, b.Signer().Public())
	if err := w.openRunner(c); err != nil {
		t.Fatal(err)
	}
	if err := w.publish(c); err != nil {
		t.Fatal(err)
	}
	info, err := b.ClusterInfo()
	if err != nil {
		t.Fatal(err)
	}
	return info
}
