package peerstatus_test

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/repo/peerstatus"
	"github.com/gitpeer/gitpeer/schema"
)

// read is peerstatus.Read of fsys under specSrc ("" for the test spec).
func read(t *testing.T, fsys fstest.MapFS, specSrc string, opts peerstatus.Options) []peerstatus.Peering {
	t.Helper()
	s := parseSpec(t)
	if specSrc != "" {
		var err error
		if s, err = schema.Parse("peering.cue", []byte(specSrc)); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := peerstatus.Read(fsys, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestReadShowsARevocationUntilWithdrawn: a peering removed from the spec
// that its provider still reports Revoking is read, after the spec's, with
// the time its provider withdraws it: its drain period after it drained.
func TestReadShowsARevocationUntilWithdrawn(t *testing.T) {
	since := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	fsys := tree(t, nil, nil)
	st := &layout.ClusterStatus{APIVersion: layout.APIVersion, Kind: layout.StatusKind, ClusterID: "beta",
		Peerings: []layout.PeeringStatus{{Consumer: "delta", Provider: "beta", Role: layout.RoleProvider, Step: layout.StepRevoking,
			RevokingSince: &metav1.Time{Time: since},
			Conditions: []metav1.Condition{cond("Ready", metav1.ConditionFalse, "peering removed from the spec: tenant delta drained and unbound"),
				cond("Reconciling", metav1.ConditionTrue, "revoking delta")}}}}
	data, err := st.Encode()
	if err != nil {
		t.Fatal(err)
	}
	fsys["clusters/beta/status.yaml"] = &fstest.MapFile{Data: data}
	sign(t, fsys)

	for _, tc := range []struct {
		name, spec string
		after      time.Time
	}{
		{"the default drain period", "", since.Add(10 * time.Minute)},
		{"the provider's drainPeriod", `clusters: [{id: "alpha"}, {id: "beta", provider: {drainPeriod: "1h"}}, {id: "gamma"}]
peerings: [{consumer: "alpha", provider: "beta"}, {consumer: "gamma", provider: "beta"}]
`, since.Add(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := read(t, fsys, tc.spec, peerstatus.Options{})
			if len(ps) != 3 {
				t.Fatalf("%d peerings, want the spec's 2 and the revocation", len(ps))
			}
			p := ps[2]
			if p.Consumer != "delta" || p.Provider != "beta" || p.Step != layout.StepRevoking || p.Ready || p.State != peerstatus.StateReconciling {
				t.Fatalf("revocation read as %+v", p)
			}
			if p.WithdrawnAfter == nil || !p.WithdrawnAfter.Time.Equal(tc.after) || p.RevokingSince == nil || !p.RevokingSince.Time.Equal(since) {
				t.Errorf("withdrawn after %v (since %v), want %v", p.WithdrawnAfter, p.RevokingSince, tc.after)
			}
			want := "removed from the spec: beta's reconciler withdraws it at its first pass after " + tc.after.Format(time.RFC3339)
			if p.Next == nil || p.Next.Cluster != "beta" || p.Next.Action != peerstatus.ActionRunReconciler || !strings.HasPrefix(p.Message, want) {
				t.Errorf("next %+v, message %q, want it to start %q", p.Next, p.Message, want)
			}
		})
	}
}

// TestReadSaysAStatusNotSignedByItsCluster: a status.yaml edited by hand is
// read as absent, as the reconcilers read it, and the peering says so,
// naming the file and the reconciler that rewrites it.
func TestReadSaysAStatusNotSignedByItsCluster(t *testing.T) {
	fsys := tree(t, &side{step: layout.StepReady, conditions: []metav1.Condition{ready}},
		&side{step: layout.StepIdentityIssued, conditions: []metav1.Condition{ready}})
	if p := read(t, fsys, "", peerstatus.Options{})[0]; !p.Ready || p.Next != nil {
		t.Fatalf("before the edit: %+v", p)
	}
	f := fsys["clusters/alpha/status.yaml"]
	f.Data = []byte(strings.Replace(string(f.Data), "peered", "peered, says a human", 1))
	p := read(t, fsys, "", peerstatus.Options{})[0]
	want := "run alpha's reconciler: clusters/alpha/status.yaml is not signed by alpha (UnsignedChange: "
	if p.Ready || p.Next == nil || p.Next.Cluster != "alpha" || p.Next.File != "clusters/alpha/status.yaml" || !strings.HasPrefix(p.Message, want) {
		t.Fatalf("after a hand edit: ready %t, next %+v, message %q; want it to start %q", p.Ready, p.Next, p.Message, want)
	}
}

// TestSlicesNotGrantedAreNotReady: a peering whose handshake is done is
// Peered, but Ready only once every slice is Accepted; a denied slice is a
// stall that asks to edit the spec, naming the slice, a pending one waits
// for the side that decides.
func TestSlicesNotGrantedAreNotReady(t *testing.T) {
	denied := []layout.SliceStatus{{Name: "web", Authentication: "Accepted", Resources: "Accepted"},
		{Name: "big", Authentication: "Accepted", Resources: "Denied", Reason: "ResourceSliceResourcesDenied", Message: "cpu: requested 32 exceeds the cap 8"}}
	pending := []layout.SliceStatus{{Name: "web", Authentication: "Pending", Resources: "Pending"}}
	cases := []struct {
		name        string
		alpha, beta []layout.SliceStatus
		state       peerstatus.State
		next        peerstatus.Next
	}{
		{"a denied slice", denied, denied, peerstatus.StateStalled, peerstatus.Next{Action: peerstatus.ActionEditSpec, File: "peering.cue",
			Message: "edit peering.cue: slice big is denied by beta (ResourceSliceResourcesDenied: cpu: requested 32 exceeds the cap 8); ask for less, remove the slice, or raise beta's class caps"}},
		{"a slice the provider has not decided", pending, pending, peerstatus.StateReconciling, peerstatus.Next{Cluster: "beta", Action: peerstatus.ActionRunReconciler,
			Message: "run beta's reconciler: it decides on slice web"}},
		{"a decision the consumer has not taken", pending, denied[:1], peerstatus.StateReconciling, peerstatus.Next{Cluster: "alpha", Action: peerstatus.ActionRunReconciler,
			Message: "run alpha's reconciler: it takes beta's decision on slice web"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := tree(t, &side{step: layout.StepReady, conditions: []metav1.Condition{ready}, slices: tc.alpha},
				&side{step: layout.StepIdentityIssued, conditions: []metav1.Condition{ready}, slices: tc.beta})
			p := read(t, fsys, "", peerstatus.Options{SpecFile: "peering.cue"})[0]
			if p.Ready || !p.Peered || p.State != tc.state {
				t.Errorf("ready %t, peered %t, state %s; want not Ready, Peered, %s", p.Ready, p.Peered, p.State, tc.state)
			}
			if p.Next == nil || *p.Next != tc.next || p.Message != tc.next.Message {
				t.Errorf("next %+v, message %q\nwant %+v", p.Next, p.Message, tc.next)
			}
		})
	}
}

// TestNextNamesWhoMustAct: each peering not Ready says whose turn it is:
// the reconciler of the handshake's next step, a cluster to publish, or a
// branch to merge that holds the step.
func TestNextNamesWhoMustAct(t *testing.T) {
	nonce := &side{step: layout.StepNonceSent, conditions: []metav1.Condition{notReady}}
	tenant := &side{step: layout.StepTenantSent, conditions: []metav1.Condition{notReady}}
	noAlpha := func(fsys fstest.MapFS) fstest.MapFS {
		delete(fsys, "clusters/alpha/cluster.yaml")
		return fsys
	}
	cases := []struct {
		name      string
		main      fstest.MapFS
		proposals map[string]fstest.MapFS
		want      peerstatus.Next
	}{
		{"nobody reported it: the provider sends the nonce", tree(t, nil, nil), nil,
			peerstatus.Next{Cluster: "beta", Action: peerstatus.ActionRunReconciler, Message: "run beta's reconciler: it sends alpha a nonce (beta has not reported this peering on the branch read)"}},
		{"a nonce sent: the consumer answers", tree(t, nil, nonce), nil,
			peerstatus.Next{Cluster: "alpha", Action: peerstatus.ActionRunReconciler, Message: "run alpha's reconciler: it answers beta's nonce with its Tenant"}},
		{"the consumer's answer awaits its merge", tree(t, nil, nonce), map[string]fstest.MapFS{"gitpeer/alpha": tree(t, tenant, nonce)},
			peerstatus.Next{Cluster: "alpha", Action: peerstatus.ActionMergeProposal, Branch: "gitpeer/alpha", Message: "merge branch gitpeer/alpha: alpha's proposal takes this peering to TenantSent there"}},
		{"a proposal that changes nothing is not named", tree(t, nil, nonce), map[string]fstest.MapFS{"docs": tree(t, nil, nonce)},
			peerstatus.Next{Cluster: "alpha", Action: peerstatus.ActionRunReconciler, Message: "run alpha's reconciler: it answers beta's nonce with its Tenant"}},
		{"a cluster not published", noAlpha(tree(t, nil, nil)), nil,
			peerstatus.Next{Cluster: "alpha", Action: peerstatus.ActionPublishCluster, File: "clusters/alpha/cluster.yaml",
				Message: "publish alpha: clusters/alpha/cluster.yaml is not on the branch read (run gitpeer init --cluster alpha --repo <checkout>, then commit and merge clusters/alpha/)"}},
		{"a cluster whose cluster.yaml awaits its merge", noAlpha(tree(t, nil, nil)), map[string]fstest.MapFS{"init-alpha": tree(t, nil, nil)},
			peerstatus.Next{Cluster: "alpha", Action: peerstatus.ActionMergeProposal, Branch: "init-alpha", File: "clusters/alpha/cluster.yaml",
				Message: "merge branch init-alpha: it publishes clusters/alpha/cluster.yaml"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts peerstatus.Options
			for branch, fsys := range tc.proposals {
				opts.Proposals = append(opts.Proposals, peerstatus.Proposal{Branch: branch, Tree: fsys})
			}
			p := read(t, tc.main, "", opts)[0]
			if p.Ready || p.Next == nil || *p.Next != tc.want || !strings.HasPrefix(p.Message, tc.want.Message) {
				t.Errorf("next %+v\nmessage %q\nwant %+v", p.Next, p.Message, tc.want)
			}
		})
	}
}
