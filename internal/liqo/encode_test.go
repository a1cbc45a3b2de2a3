package liqo_test

import (
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/liqo"
)

func encode(t testing.TB, obj any) string {
	t.Helper()
	data, err := liqo.Encode(obj)
	if err != nil {
		t.Fatalf("encode %T: %v", obj, err)
	}
	return string(data)
}

func TestEncodeIsDeterministic(t *testing.T) {
	objs := map[string]func() any{
		"a namespace with five labels": func() any { return liqo.Namespace("cl-consumer") },
		"a nonce secret":               func() any { return liqo.NonceSecret("cl-consumer", strings.Repeat("A", 86)+"==") },
		"a resource slice with annotations and resources": func() any {
			return liqo.ResourceSlice("web", "cl-consumer", "cl-provider", "", resources(t, "cpu", "4", "memory", "8Gi", "pods", "110"), true, []byte("csr"))
		},
	}
	for name, build := range objs {
		t.Run("encodes "+name+" to the same bytes every time", func(t *testing.T) {
			first := encode(t, build())
			for range 20 {
				if got := encode(t, build()); got != first {
					t.Fatalf("encodings differ:\n%s\n---\n%s", first, got)
				}
			}
		})
	}
}

func TestEncodeDropsFieldsNobodySet(t *testing.T) {
	tenant := liqo.Tenant("cl-consumer", []byte("k"), []byte("c"), []byte("s"))
	if raw := mustJSON(t, tenant); !strings.Contains(raw, `"status":{}`) {
		t.Fatalf("the API type no longer serialises an empty status; this case checks nothing: %s", raw)
	}
	// Older apimachinery versions serialise an unset creationTimestamp as null.
	old := map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "x", "creationTimestamp": nil},
		"status":   map[string]any{},
	}
	for name, obj := range map[string]any{"a Tenant": tenant, "an object with a null creationTimestamp": old} {
		t.Run("drops them from "+name, func(t *testing.T) {
			out := encode(t, obj)
			for _, unwanted := range []string{"creationTimestamp", "status"} {
				if strings.Contains(out, unwanted) {
					t.Errorf("encoded object carries %s:\n%s", unwanted, out)
				}
			}
		})
	}
}

func TestEncodeKeepsFieldsSomebodySet(t *testing.T) {
	tenant := liqo.Tenant("cl-consumer", []byte("k"), []byte("c"), []byte("s"))
	tenant.Status.TenantNamespace = "liqo-tenant-cl-consumer"
	tenant.CreationTimestamp = metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := encode(t, tenant)
	for _, want := range []string{"creationTimestamp: \"2026-01-02T03:04:05Z\"", "status:\n  tenantNamespace: liqo-tenant-cl-consumer\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("encoded Tenant lacks %q:\n%s", want, out)
		}
	}
	rs := liqo.ResourceSlice("web", "a", "b", "", nil, false, nil)
	rs.Status.Conditions = []authv1beta1.ResourceSliceCondition{{Type: authv1beta1.ResourceSliceConditionTypeAuthentication, Status: authv1beta1.ResourceSliceConditionAccepted}}
	if out := encode(t, rs); !strings.Contains(out, "status:\n  conditions:\n") {
		t.Errorf("encoded slice lost its status:\n%s", out)
	}
}

func TestEncodeSortsKeys(t *testing.T) {
	out := encode(t, liqo.NonceSecret("cl-consumer", "n"))
	order := []string{"apiVersion:", "data:", "kind:", "metadata:", "type:"}
	last := -1
	for _, k := range order {
		i := strings.Index(out, "\n"+k)
		if k == "apiVersion:" {
			i = strings.Index(out, k)
		}
		if i <= last {
			t.Fatalf("%s is not in sorted position:\n%s", k, out)
		}
		last = i
	}
}

func TestEncodeRefusesWhatIsNotAnObject(t *testing.T) {
	for name, v := range map[string]any{
		"a string":          "Tenant",
		"a list":            []corev1.Secret{{}},
		"a channel":         make(chan int),
		"an unmarshallable": func() {},
	} {
		if out, err := liqo.Encode(v); err == nil || !strings.HasPrefix(err.Error(), "encode: ") {
			t.Errorf("Encode(%s) = %q, %v; want an encode error", name, out, err)
		}
	}
}
