package fluxtrust

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitpeer/gitpeer/commitsig"
)

// sshLine is a new key of alpha as SSHKey writes it (next: the staged one).
func sshLine(t testing.TB, next bool) []byte {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	line, err := SSHKey("alpha", pub, next)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// The Component builds, with kustomize as Flux's kustomize-controller runs
// it, into the one Secret GitRepository gitpeer-<id> verifies with, holding
// exactly the keys given; and the same keys give the same bytes.
func TestFilesBuildIntoTheVerifySecret(t *testing.T) {
	cur, next := sshLine(t, false), sshLine(t, true)
	files, err := Files("alpha", Keys{Format: commitsig.FormatSSH, Current: cur, Next: next})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Files("alpha", Keys{Format: commitsig.FormatSSH, Current: cur, Next: next})
	for f := range files {
		if !bytes.Equal(files[f], again[f]) {
			t.Errorf("%s differs between two renderings of the same keys", f)
		}
	}
	mem := filesys.MakeFsInMemory()
	_ = mem.WriteFile("/tree/kustomization.yaml", []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\ncomponents: [flux]\n"))
	for f, data := range files {
		_ = mem.WriteFile("/tree/"+f, data)
	}
	built, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/tree")
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	if n := built.Size(); n != 1 {
		t.Fatalf("built %d objects, want the Secret alone", n)
	}
	s := built.Resources()[0]
	if s.GetKind() != "Secret" || s.GetName() != SecretName || s.GetNamespace() != Namespace {
		t.Fatalf("built %s %s/%s, want Secret %s/%s", s.GetKind(), s.GetNamespace(), s.GetName(), Namespace, SecretName)
	}
	y, _ := s.AsYAML()
	if !strings.Contains(string(y), "kustomize.toolkit.fluxcd.io/prune: disabled") {
		t.Errorf("the built Secret may be pruned:\n%s", y)
	}
	if b, err := Parse("built", "alpha", commitsig.FormatSSH, y); err != nil || string(b.Current) != strings.TrimSpace(string(cur)) || string(b.Next) != strings.TrimSpace(string(next)) {
		t.Errorf("the built Secret holds %q and %q (%v), want the two keys given:\n%s", b.Current, b.Next, err, y)
	}
	k, err := Parse("flux/"+SecretFile, "alpha", commitsig.FormatSSH, files["flux/"+SecretFile])
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(k.Current)) != strings.TrimSpace(string(cur)) || strings.TrimSpace(string(k.Next)) != strings.TrimSpace(string(next)) {
		t.Errorf("Parse gave %q / %q", k.Current, k.Next)
	}
}

// Outside a rollover the Secret holds the key in force alone: the old key
// is trusted nowhere once the rollover is done.
func TestFilesWithoutNextHoldOneKey(t *testing.T) {
	files, err := Files("alpha", Keys{Format: commitsig.FormatSSH, Current: sshLine(t, false)})
	if err != nil {
		t.Fatal(err)
	}
	k, err := Parse("f", "alpha", commitsig.FormatSSH, files["flux/"+SecretFile])
	if err != nil {
		t.Fatal(err)
	}
	if k.Next != nil {
		t.Errorf("a next key outside a rollover: %q", k.Next)
	}
	if _, err := Files("alpha", Keys{}); err == nil {
		t.Error("Files without a current key: no error")
	}
}

// A Secret that is not the shape gitpeer writes is refused by name: a
// repo writer's extra key would otherwise ride into Flux's trust.
func TestParseRefusesWhatGitpeerDoesNotWrite(t *testing.T) {
	cur := strings.TrimSpace(string(sshLine(t, false)))
	for name, tc := range map[string]struct{ data, want string }{
		"extra key":   {"apiVersion: v1\nkind: Secret\nstringData:\n  alpha.sshpub: " + cur + "\n  mallory.sshpub: " + cur + "\n", "stringData.mallory.sshpub"},
		"binary data": {"apiVersion: v1\nkind: Secret\ndata:\n  x: eA==\nstringData:\n  alpha.sshpub: " + cur + "\n", "data:"},
		"no current":  {"apiVersion: v1\nkind: Secret\nstringData:\n  alpha-next.sshpub: " + cur + "\n", "missing"},
		"not yaml":    {"{", "f.yaml"},
		"unknown":     {"apiVersion: v1\nkind: Secret\nsurprise: 1\n", "surprise"},
		"not a key":   {"apiVersion: v1\nkind: Secret\nstringData:\n  alpha.sshpub: hello\n", "not an authorized_keys line"},
		"other label": {"apiVersion: v1\nkind: Secret\nstringData:\n  alpha.sshpub: " + cur + "\n  alpha-next.sshpub: " + cur + "\n", "alpha-next.sshpub: is not written as gitpeer writes"},
	} {
		_, err := Parse("f.yaml", "alpha", commitsig.FormatSSH, []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", name, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	files, _ := Files("alpha", Keys{Format: commitsig.FormatSSH, Current: sshLine(f, false), Next: sshLine(f, true)})
	f.Add(files["flux/"+SecretFile])
	f.Add([]byte("stringData: {alpha.sshpub: 1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := Parse("f", "alpha", commitsig.FormatSSH, data)
		if err == nil && k.Current == nil {
			t.Fatal("no error and no current key")
		}
	})
}
