package peerstatus_test

import (
	"crypto"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/repo/peerstatus"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
	"github.com/gitpeer/gitpeer/schema"
)

const spec = `
clusters: [{id: "alpha"}, {id: "beta"}, {id: "gamma"}]
peerings: [
	{consumer: "alpha", provider: "beta"},
	{consumer: "gamma", provider: "beta"},
]
`

func parseSpec(t *testing.T) *schema.Spec {
	t.Helper()
	s, err := schema.Parse("peering.cue", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// side is one cluster's view of the alpha → beta peering.
type side struct {
	step       layout.Step
	conditions []metav1.Condition
	slices     []layout.SliceStatus
}

func cond(typ string, status metav1.ConditionStatus, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: "Test", Message: msg}
}

var (
	ready      = cond("Ready", metav1.ConditionTrue, "peered")
	notReady   = cond("Ready", metav1.ConditionFalse, "waiting")
	stalled    = cond("Stalled", metav1.ConditionTrue, "tenant refused")
	notStalled = cond("Stalled", metav1.ConditionFalse, "")
)

// tree writes status.yaml files for alpha (consumer) and beta (provider);
// a nil side writes none.
func tree(t *testing.T, alpha, beta *side) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	for id, s := range map[string]*side{"alpha": alpha, "beta": beta} {
		if s == nil {
			continue
		}
		role := layout.RoleConsumer
		if id == "beta" {
			role = layout.RoleProvider
		}
		st := &layout.ClusterStatus{APIVersion: layout.APIVersion, Kind: layout.StatusKind, ClusterID: id,
			Peerings: []layout.PeeringStatus{{Consumer: "alpha", Provider: "beta", Role: role, Step: s.step, Conditions: s.conditions, Slices: s.slices}}}
		data, err := st.Encode()
		if err != nil {
			t.Fatal(err)
		}
		fsys[layout.ClusterPath(id, layout.StatusFile)] = &fstest.MapFile{Data: data}
	}
	sign(t, fsys)
	return fsys
}

var keys = map[string]crypto.Signer{}

// sign publishes a cluster.yaml for alpha, beta and gamma and signs each
// one's directory, as their reconcilers do.
func sign(t *testing.T, fsys fstest.MapFS) {
	t.Helper()
	ca, _, err := handshake.NewCA("test", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"alpha", "beta", "gamma"} {
		if keys[id] == nil {
			if keys[id], err = handshake.GenerateKey(); err != nil {
				t.Fatal(err)
			}
		}
		ci, err := layout.NewClusterInfo(id, keys[id].Public(), "https://"+id+".example:6443", ca.CertPEM)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := ci.Encode()
		fsys[layout.ClusterPath(id, layout.ClusterFile)] = &fstest.MapFile{Data: data}
		dir := layout.ClusterPath(id)
		files := map[string][]byte{}
		for p, f := range fsys {
			if rel, ok := strings.CutPrefix(p, dir+"/"); ok && rel != dirmanifest.FileName {
				files[rel] = f.Data
			}
		}
		_, m, err := dirmanifest.Build(keys[id], id, dir, files, 1)
		if err != nil {
			t.Fatal(err)
		}
		fsys[layout.ClusterPath(id, dirmanifest.FileName)] = &fstest.MapFile{Data: m}
	}
}

func TestCollectIgnoresAnUnsignedStatus(t *testing.T) {
	fsys := tree(t, &side{step: layout.StepTenantSent, conditions: []metav1.Condition{notReady}}, nil)
	// A writer pushes a status for both sides saying Ready, signed by nobody.
	for _, id := range []string{"alpha", "beta"} {
		st := &layout.ClusterStatus{APIVersion: layout.APIVersion, Kind: layout.StatusKind, ClusterID: id,
			Peerings: []layout.PeeringStatus{{Consumer: "alpha", Provider: "beta", Step: layout.StepReady, Conditions: []metav1.Condition{ready}}}}
		data, _ := st.Encode()
		fsys[layout.ClusterPath(id, layout.StatusFile)] = &fstest.MapFile{Data: data}
	}
	if p := collect(t, fsys)[0]; p.Ready || p.Step == layout.StepReady {
		t.Errorf("an unsigned status counted: %+v", p)
	}
}

func collect(t *testing.T, fsys fstest.MapFS) []peerstatus.Peering {
	t.Helper()
	ps, err := peerstatus.Collect(fsys, parseSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Consumer != "alpha" || ps[1].Consumer != "gamma" {
		t.Fatalf("peerings %+v, want the spec's two in spec order", ps)
	}
	return ps
}

func TestCollect(t *testing.T) {
	web := []layout.SliceStatus{{Name: "web", Authentication: "Accepted", Resources: "Accepted"}}
	pendingWeb := []layout.SliceStatus{{Name: "web", Authentication: "Pending", Resources: "Pending"}}
	cases := []struct {
		name        string
		alpha, beta *side
		step        layout.Step
		ready       bool
		conditions  int
		slices      []layout.SliceStatus
	}{
		{name: "a peering nobody reported is Pending", step: layout.StepPending},
		{name: "the provider's nonce makes it NonceSent",
			beta: &side{step: layout.StepNonceSent, conditions: []metav1.Condition{notReady}},
			step: layout.StepNonceSent, conditions: 1},
		{name: "the step is the furthest either side reports",
			alpha: &side{step: layout.StepTenantSent, conditions: []metav1.Condition{notReady}},
			beta:  &side{step: layout.StepIdentityIssued, conditions: []metav1.Condition{ready}},
			step:  layout.StepIdentityIssued, conditions: 2},
		{name: "the consumer's step wins when it is further",
			alpha: &side{step: layout.StepReady, conditions: []metav1.Condition{notReady}},
			beta:  &side{step: layout.StepNonceSent, conditions: []metav1.Condition{notReady}},
			step:  layout.StepReady, conditions: 2},
		{name: "it is Ready when both sides say Ready",
			alpha: &side{step: layout.StepReady, conditions: []metav1.Condition{ready, notStalled}},
			beta:  &side{step: layout.StepIdentityIssued, conditions: []metav1.Condition{ready, notStalled}},
			step:  layout.StepReady, ready: true, conditions: 4},
		{name: "it is not Ready when only the consumer says so",
			alpha: &side{step: layout.StepReady, conditions: []metav1.Condition{ready}},
			beta:  &side{step: layout.StepIdentityIssued, conditions: []metav1.Condition{notReady}},
			step:  layout.StepReady, conditions: 2},
		{name: "it is not Ready when only the provider says so",
			alpha: &side{step: layout.StepTenantSent, conditions: []metav1.Condition{notReady}},
			beta:  &side{step: layout.StepReady, conditions: []metav1.Condition{ready}},
			step:  layout.StepReady, conditions: 2},
		{name: "it is not Ready when the provider has no status",
			alpha: &side{step: layout.StepReady, conditions: []metav1.Condition{ready}},
			step:  layout.StepReady, conditions: 1},
		{name: "one side saying Ready twice is still one side",
			alpha: &side{step: layout.StepReady, conditions: []metav1.Condition{ready, ready}},
			beta:  &side{step: layout.StepIdentityIssued, conditions: []metav1.Condition{notReady}},
			step:  layout.StepReady, conditions: 3},
		{name: "one side saying Ready twice without the other is not Ready",
			alpha: &side{step: layout.StepReady, conditions: []metav1.Condition{ready, ready}},
			step:  layout.StepReady, conditions: 2},
		{name: "both sides Ready before the handshake's last step is not Ready",
			alpha: &side{step: layout.StepTenantSent, conditions: []metav1.Condition{ready}},
			beta:  &side{step: layout.StepIdentityIssued, conditions: []metav1.Condition{ready}},
			step:  layout.StepIdentityIssued, conditions: 2},
		{name: "a revoking peering ranks below every handshake step",
			alpha: &side{step: layout.StepRevoking},
			beta:  &side{step: layout.StepNonceSent},
			step:  layout.StepNonceSent},
		{name: "slices are the consumer's view",
			alpha: &side{step: layout.StepReady, slices: web},
			beta:  &side{step: layout.StepReady, slices: pendingWeb},
			step:  layout.StepReady, slices: web},
		{name: "slices are the provider's view until the consumer has one",
			alpha: &side{step: layout.StepReady},
			beta:  &side{step: layout.StepReady, slices: pendingWeb},
			step:  layout.StepReady, slices: pendingWeb},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := collect(t, tree(t, tc.alpha, tc.beta))[0]
			if p.Consumer != "alpha" || p.Provider != "beta" {
				t.Fatalf("peering %s → %s", p.Consumer, p.Provider)
			}
			if p.Step != tc.step {
				t.Errorf("step %s, want %s", p.Step, tc.step)
			}
			if p.Ready != tc.ready {
				t.Errorf("ready %t, want %t", p.Ready, tc.ready)
			}
			if len(p.Conditions) != tc.conditions || p.Conditions == nil {
				t.Errorf("%d conditions (%v), want %d and never nil", len(p.Conditions), p.Conditions, tc.conditions)
			}
			if len(p.Slices) != len(tc.slices) || (len(tc.slices) > 0 && p.Slices[0] != tc.slices[0]) {
				t.Errorf("slices %+v, want %+v", p.Slices, tc.slices)
			}
		})
	}
}

func TestCollectAttributesConditionsToTheirCluster(t *testing.T) {
	p := collect(t, tree(t,
		&side{step: layout.StepTenantSent, conditions: []metav1.Condition{cond("Ready", metav1.ConditionFalse, "from alpha")}},
		&side{step: layout.StepNonceSent, conditions: []metav1.Condition{cond("Ready", metav1.ConditionFalse, "from beta")}}))[0]
	for _, c := range p.Conditions {
		if !strings.HasSuffix(c.Message, c.Cluster) {
			t.Errorf("condition %q attributed to %s", c.Message, c.Cluster)
		}
	}
}

func TestCollectIgnoresAClaimAboutAnotherPeering(t *testing.T) {
	// gamma reports alpha → beta as Ready: it is not a side of that peering.
	st := &layout.ClusterStatus{APIVersion: layout.APIVersion, Kind: layout.StatusKind, ClusterID: "gamma",
		Peerings: []layout.PeeringStatus{{Consumer: "alpha", Provider: "beta", Step: layout.StepReady, Conditions: []metav1.Condition{ready}}}}
	data, err := st.Encode()
	if err != nil {
		t.Fatal(err)
	}
	fsys := tree(t, &side{step: layout.StepReady, conditions: []metav1.Condition{ready}}, nil)
	fsys["clusters/gamma/status.yaml"] = &fstest.MapFile{Data: data}
	sign(t, fsys)
	p := collect(t, fsys)[0]
	if p.Ready || len(p.Conditions) != 1 {
		t.Errorf("gamma's claim counted: ready=%t, conditions %v", p.Ready, p.Conditions)
	}
}

func TestCollectNamesAMalformedStatusFile(t *testing.T) {
	fsys := tree(t, nil, nil)
	fsys["clusters/beta/status.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: gitpeer.io/v1alpha1\nkind: ClusterStatus\nclusterID: alpha\n")}
	sign(t, fsys)
	_, err := peerstatus.Collect(fsys, parseSpec(t))
	var fe *layout.FieldError
	if !errors.As(err, &fe) || fe.File != "clusters/beta/status.yaml" {
		t.Fatalf("error %v, want a FieldError naming clusters/beta/status.yaml", err)
	}
}

func TestSummary(t *testing.T) {
	cases := []struct {
		name        string
		alpha, beta *side
		want        string
	}{
		{name: "nothing reported says nothing", want: ""},
		{name: "a stall is what a user must read first",
			alpha: &side{conditions: []metav1.Condition{notReady}},
			beta:  &side{conditions: []metav1.Condition{notReady, stalled}},
			want:  "beta: tenant refused"},
		{name: "otherwise the side that is not Ready speaks",
			alpha: &side{conditions: []metav1.Condition{cond("Ready", metav1.ConditionFalse, "waiting for the identity")}},
			beta:  &side{conditions: []metav1.Condition{ready}},
			want:  "alpha: waiting for the identity"},
		{name: "a Stalled=False condition is not a stall",
			alpha: &side{conditions: []metav1.Condition{ready, notStalled}},
			beta:  &side{conditions: []metav1.Condition{cond("Ready", metav1.ConditionFalse, "signing")}},
			want:  "beta: signing"},
		{name: "when both are Ready the last message stands",
			alpha: &side{conditions: []metav1.Condition{cond("Ready", metav1.ConditionTrue, "alpha is peered")}},
			beta:  &side{conditions: []metav1.Condition{cond("Ready", metav1.ConditionTrue, "beta is peered")}},
			want:  "alpha: alpha is peered"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := collect(t, tree(t, tc.alpha, tc.beta))[0]
			if got := p.Summary(); got != tc.want {
				t.Errorf("Summary() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSliceSummary(t *testing.T) {
	cases := []struct {
		name   string
		slices []layout.SliceStatus
		want   string
	}{
		{"no slices is a dash", nil, "-"},
		{"an accepted slice", []layout.SliceStatus{{Name: "web", Authentication: "Accepted", Resources: "Accepted"}}, "web:Accepted"},
		{"a denial of either kind is Denied", []layout.SliceStatus{
			{Name: "a", Authentication: "Denied", Resources: "Pending"},
			{Name: "b", Authentication: "Accepted", Resources: "Denied"},
		}, "a:Denied b:Denied"},
		{"a pending decision is Pending", []layout.SliceStatus{
			{Name: "a", Authentication: "Pending", Resources: "Pending"},
			{Name: "b", Authentication: "Accepted", Resources: "Pending"},
		}, "a:Pending b:Pending"},
		{"slices keep their order", []layout.SliceStatus{
			{Name: "z", Authentication: "Accepted", Resources: "Accepted"},
			{Name: "a", Authentication: "Denied", Resources: "Denied"},
		}, "z:Accepted a:Denied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := (peerstatus.Peering{Slices: tc.slices}).SliceSummary(); got != tc.want {
				t.Errorf("SliceSummary() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStateAndClusters(t *testing.T) {
	cases := []struct {
		name        string
		alpha, beta *side
		want        peerstatus.State
	}{
		{name: "nothing reported is Reconciling", want: peerstatus.StateReconciling},
		{name: "both sides Ready is Ready",
			alpha: &side{step: layout.StepReady, conditions: []metav1.Condition{ready}},
			beta:  &side{step: layout.StepIdentityIssued, conditions: []metav1.Condition{ready}},
			want:  peerstatus.StateReady},
		{name: "a side Stalled is Stalled, whatever the other says",
			alpha: &side{step: layout.StepReady, conditions: []metav1.Condition{ready}},
			beta:  &side{step: layout.StepIdentityIssued, conditions: []metav1.Condition{notReady, stalled}},
			want:  peerstatus.StateStalled},
		{name: "Stalled=False is not Stalled",
			alpha: &side{step: layout.StepTenantSent, conditions: []metav1.Condition{notReady, notStalled}},
			want:  peerstatus.StateReconciling},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := tree(t, tc.alpha, tc.beta)
			ps := collect(t, fsys)
			if ps[0].State != tc.want {
				t.Errorf("state %s, want %s", ps[0].State, tc.want)
			}
			// gamma → beta is never reported: Reconciling, and the worst of
			// each cluster's peerings is its state.
			clusters := peerstatus.Clusters(fsys, parseSpec(t), ps)
			worst := tc.want
			if worst == peerstatus.StateReady {
				worst = peerstatus.StateReconciling
			}
			want := []peerstatus.Cluster{
				{ID: "alpha", Published: true, State: tc.want},
				{ID: "beta", Published: true, State: worst},
				{ID: "gamma", Published: true, State: peerstatus.StateReconciling},
			}
			for i := range want {
				if clusters[i] != want[i] {
					t.Errorf("clusters %+v, want %+v", clusters, want)
					break
				}
			}
		})
	}
	fsys := tree(t, nil, nil)
	delete(fsys, "clusters/gamma/cluster.yaml")
	if c := peerstatus.Clusters(fsys, parseSpec(t), nil)[2]; c.Published || c.State != "" {
		t.Errorf("gamma without cluster.yaml nor peerings: %+v", c)
	}
}
