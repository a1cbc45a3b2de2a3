package policy

import (
	"strings"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestDecide(t *testing.T) {
	gpu := []Class{{Name: "gpu", Caps: list("cpu", "8", "nvidia.com/gpu", "2")}, {Name: "default", Caps: DefaultCaps()}}
	active := authv1beta1.TenantConditionActive
	cases := []struct {
		name     string
		classes  []Class
		tenant   authv1beta1.TenantCondition
		req      Request
		accepted bool
		message  string
		granted  corev1.ResourceList
	}{
		{"accepts a request within Liqo's default caps", nil, active, Request{Resources: list("cpu", "2", "memory", "4Gi")}, true, "",
			list("cpu", "2", "memory", "4Gi", "pods", "110", "ephemeral-storage", "20Gi")},
		{"accepts the empty class as default", nil, "", Request{Class: "", Resources: list("cpu", "4")}, true, "", nil},
		{"denies cpu over the default cap", nil, active, Request{Resources: list("cpu", "16")}, false, "cpu: requested 16 exceeds the cap 4 of class default", nil},
		{"denies memory over the cap", nil, active, Request{Resources: list("memory", "9Gi")}, false, "memory: requested 9Gi exceeds the cap 8Gi", nil},
		{"denies an extended resource the class does not cap", nil, active, Request{Resources: list("nvidia.com/gpu", "1")}, false, "nvidia.com/gpu: class default has no cap for it", nil},
		{"accepts an extended resource a class caps", gpu, active, Request{Class: "gpu", Resources: list("nvidia.com/gpu", "2")}, true, "", list("cpu", "8", "nvidia.com/gpu", "2")},
		{"denies a class not offered", gpu, active, Request{Class: "fast", Resources: list("cpu", "1")}, false, `class "fast" is not offered (offered: gpu, default)`, nil},
		{"denies a new slice of a cordoned tenant", nil, authv1beta1.TenantConditionCordoned, Request{Resources: list("cpu", "1")}, false, "cordoned", nil},
		{"keeps an accepted slice of a cordoned tenant", nil, authv1beta1.TenantConditionCordoned, Request{Resources: list("cpu", "1"), WasAccepted: true}, true, "", nil},
		{"denies every slice of a drained tenant", nil, authv1beta1.TenantConditionDrained, Request{Resources: list("cpu", "1"), WasAccepted: true}, false, "drained", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.classes, tc.tenant, tc.req)
			if d.Accepted != tc.accepted {
				t.Fatalf("accepted = %t (%s), want %t", d.Accepted, d.Message, tc.accepted)
			}
			wantReason := "ResourceSliceResourcesDenied"
			if tc.accepted {
				wantReason = "ResourceSliceResourcesAccepted"
			}
			if d.Reason != wantReason {
				t.Errorf("reason %s, want %s", d.Reason, wantReason)
			}
			if !strings.Contains(d.Message, tc.message) {
				t.Errorf("message %q lacks %q", d.Message, tc.message)
			}
			if !tc.accepted && d.Granted != nil {
				t.Errorf("denied but granted %v", d.Granted)
			}
			for r, q := range tc.granted {
				if g := d.Granted[r]; g.Cmp(q) != 0 {
					t.Errorf("granted %s = %s, want %s", r, g.String(), q.String())
				}
			}
			if tc.granted != nil && len(d.Granted) != len(tc.granted) {
				t.Errorf("granted %v, want %v", d.Granted, tc.granted)
			}
		})
	}
}

func TestCheckNamesEachResourceOverItsCap(t *testing.T) {
	gpu := []Class{{Name: "gpu", Caps: list("cpu", "8", "nvidia.com/gpu", "2")}}
	class, v := Check(gpu, "gpu", list("cpu", "16", "nvidia.com/gpu", "1", "memory", "1Gi"))
	if class == nil || class.Name != "gpu" {
		t.Fatalf("class %+v, want gpu", class)
	}
	want := []Violation{
		{Resource: "cpu", Message: "requested 16 exceeds the cap 8 of class gpu"},
		{Resource: "memory", Message: "class gpu has no cap for it"},
	}
	if len(v) != len(want) || v[0] != want[0] || v[1] != want[1] {
		t.Errorf("violations %+v, want %+v", v, want)
	}
	if class, v := Check(gpu, "", list("cpu", "1")); class != nil || len(v) != 1 || v[0].Resource != "" || v[0].String() != `class "default" is not offered (offered: gpu)` {
		t.Errorf("default class of a provider offering gpu only: %+v %+v", class, v)
	}
	if _, v := Check(nil, "", list("cpu", "4", "memory", "8Gi")); len(v) != 0 {
		t.Errorf("within Liqo's default caps: %+v", v)
	}
}
