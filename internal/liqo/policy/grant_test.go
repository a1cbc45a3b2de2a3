package policy

import (
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/reasons"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
)

func TestGrantOnlyWhatTheSpecLists(t *testing.T) {
	active := authv1beta1.TenantConditionActive
	gpu := []Class{{Name: "default", Caps: list("cpu", "4", "memory", "8Gi")}, {Name: "gpu", Caps: list("cpu", "8", "nvidia.com/gpu", "2")}}
	pool := &Listed{Name: "pool", Resources: list("cpu", "2", "memory", "4Gi")}
	cases := []struct {
		name    string
		listed  *Listed
		req     Request
		tenant  authv1beta1.TenantCondition
		why     string // "" and accepted, or the gitpeer reason
		liqo    bool   // denied for Liqo's own reason (Why empty)
		message string
	}{
		{name: "grants the listed slice", listed: pool, req: Request{Name: "pool", Resources: list("cpu", "2", "memory", "4096Mi")}},
		{name: "reads class default as the spec's empty class", listed: pool, req: Request{Name: "pool", Class: "default", Resources: list("cpu", "2", "memory", "4Gi")}},
		{name: "denies a slice the spec does not list", req: Request{Name: "extra", Resources: list("cpu", "1")},
			why: reasons.SliceNotInSpec, message: "SliceNotInSpec: the spec lists no slice extra for this peering"},
		{name: "denies more resources than the spec's slice, within the caps", listed: pool, req: Request{Name: "pool", Resources: list("cpu", "4", "memory", "4Gi")},
			why: reasons.SliceDiffersFromSpec, message: "resources {cpu=4, memory=4Gi}, the spec's are {cpu=2, memory=4Gi}"},
		{name: "denies a resource the spec's slice does not name", listed: pool, req: Request{Name: "pool", Resources: list("cpu", "2", "memory", "4Gi", "pods", "10")},
			why: reasons.SliceDiffersFromSpec},
		{name: "denies another class", listed: pool, req: Request{Name: "pool", Class: "gpu", Resources: list("cpu", "2", "memory", "4Gi")},
			why: reasons.SliceDiffersFromSpec, message: "class gpu, the spec's is default"},
		{name: "denies an unlisted slice of a drained tenant as not in the spec", req: Request{Name: "x"}, tenant: authv1beta1.TenantConditionDrained,
			why: reasons.SliceNotInSpec},
		{name: "leaves the per-slice caps to Liqo's decision", listed: &Listed{Name: "big", Resources: list("cpu", "64")}, req: Request{Name: "big", Resources: list("cpu", "64")},
			liqo: true, message: "exceeds the cap 4"},
		{name: "keeps Liqo's cordon", listed: pool, req: Request{Name: "pool", Resources: list("cpu", "2", "memory", "4Gi")}, tenant: authv1beta1.TenantConditionCordoned,
			liqo: true, message: "cordoned"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tenant := tc.tenant
			if tenant == "" {
				tenant = active
			}
			d := Grant(gpu, tenant, tc.listed, tc.req, NewBudget(gpu))
			wantAccepted := tc.why == "" && !tc.liqo
			if d.Accepted != wantAccepted || d.Why != tc.why {
				t.Fatalf("accepted %t why %q (%s), want %t %q", d.Accepted, d.Why, d.Message, wantAccepted, tc.why)
			}
			if !d.Accepted && d.Reason != "ResourceSliceResourcesDenied" {
				t.Errorf("reason %q, want Liqo's ResourceSliceResourcesDenied", d.Reason)
			}
			if !strings.Contains(d.Message, tc.message) {
				t.Errorf("message %q lacks %q", d.Message, tc.message)
			}
			if tc.why != "" && ReasonOf(d.Message) != tc.why {
				t.Errorf("ReasonOf(%q) = %q, want %q", d.Message, ReasonOf(d.Message), tc.why)
			}
			if !d.Accepted && d.Granted != nil {
				t.Errorf("denied but granted %v", d.Granted)
			}
		})
	}
}

func TestGrantHoldsTheClassTotalPerConsumer(t *testing.T) {
	active := authv1beta1.TenantConditionActive
	classes := []Class{{Name: "default", Caps: list("cpu", "4", "memory", "8Gi")}, {Name: "gpu", Caps: list("cpu", "8", "nvidia.com/gpu", "2")}}
	b := NewBudget(classes)
	grant := func(name, class string, res ...string) Decision {
		l := &Listed{Name: name, Class: class, Resources: list(res...)}
		return Grant(classes, active, l, Request{Name: name, Class: class, Resources: list(res...)}, b)
	}
	if d := grant("a", "", "cpu", "3", "memory", "2Gi"); !d.Accepted {
		t.Fatalf("a: %s", d.Message)
	}
	// Within its own caps, but a's 3 cpu and b's 2 make 5, over 4.
	d := grant("b", "", "cpu", "2", "memory", "2Gi")
	if d.Accepted || d.Why != reasons.SliceOverClassTotal {
		t.Fatalf("b: accepted %t why %q (%s), want denied SliceOverClassTotal", d.Accepted, d.Why, d.Message)
	}
	assertContainsAll(t, d.Message, "SliceOverClassTotal: slice b", "cpu: 2 requested and 3 already granted in class default make 5, over its cap 4")
	if strings.Contains(d.Message, "memory") {
		t.Errorf("names memory, which fits: %s", d.Message)
	}
	// A denied slice took nothing: one that fits what is left is granted.
	if d := grant("c", "default", "cpu", "1", "memory", "6Gi"); !d.Accepted {
		t.Fatalf("c: %s", d.Message)
	}
	// Another class has its own total.
	if d := grant("g", "gpu", "cpu", "8", "nvidia.com/gpu", "2"); !d.Accepted {
		t.Fatalf("g: %s", d.Message)
	}
	if d := grant("h", "gpu", "nvidia.com/gpu", "1"); d.Accepted || d.Why != reasons.SliceOverClassTotal {
		t.Fatalf("h: accepted %t why %q, want SliceOverClassTotal", d.Accepted, d.Why)
	}
	// A request denied before the total (not listed) takes nothing either.
	if d := Grant(classes, active, nil, Request{Name: "x", Resources: list("memory", "1Gi")}, b); d.Accepted {
		t.Fatal("x granted")
	}
	if d := grant("m", "", "memory", "0"); !d.Accepted {
		t.Fatalf("m: %s", d.Message)
	}
}

func TestCheckNameRefusesWhatLiqoCannotName(t *testing.T) {
	for _, name := range []string{"pool", "a", "web-2", strings.Repeat("a", 63)} {
		if err := CheckName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", "system:masters", "system-x:y", "Pool", "a b", "-a", "a-", "a_b", strings.Repeat("a", 64), "ä"} {
		if err := CheckName(name); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
	if err := CheckName(strings.Repeat("x", 300)); err == nil || len(err.Error()) > 250 {
		t.Errorf("a long name is quoted whole: %v", err)
	}
}

func assertContainsAll(t *testing.T, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%q lacks %q", s, w)
		}
	}
}
