package fluxtrust

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
)

func newKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// keys is alpha's keys: a key in force and, with next, a staged one.
func keys(t testing.TB, next bool) Keys {
	t.Helper()
	var staged ed25519.PrivateKey
	if next {
		staged = newKey(t)
	}
	var k Keys
	var err error
	if staged != nil {
		k, err = Of("alpha", newKey(t), staged)
	} else {
		k, err = Of("alpha", newKey(t), nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The Component builds, with kustomize as Flux's kustomize-controller runs
// it, into the one Secret GitRepository gitpeer-<id> verifies with, holding
// exactly the keys given in both forms Flux reads; and the same keys give
// the same bytes.
func TestFilesBuildIntoTheVerifySecret(t *testing.T) {
	k := keys(t, true)
	files, err := Files("alpha", k)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Files("alpha", k)
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
	b, err := Parse("built", "alpha", y)
	if err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2][]byte{"ssh": {b.SSH, k.SSH}, "openpgp": {b.OpenPGP, k.OpenPGP}, "next ssh": {b.NextSSH, k.NextSSH}, "next openpgp": {b.NextOpenPGP, k.NextOpenPGP}} {
		if strings.TrimSpace(string(pair[0])) != strings.TrimSpace(string(pair[1])) {
			t.Errorf("the built Secret's %s key is %q, want %q", name, pair[0], pair[1])
		}
	}
	for _, name := range []string{"alpha.sshpub", "alpha.asc", "alpha-next.sshpub", "alpha-next.asc"} {
		if !strings.Contains(string(y), name+":") {
			t.Errorf("the built Secret has no %s", name)
		}
	}
}

// Both forms of one key: source-controller verifies a head signed in
// either format with the same cluster key.
func TestOfGivesTheKeyInBothForms(t *testing.T) {
	key := newKey(t)
	k, err := Of("alpha", key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := commitsig.CheckOpenPGPKey(k.OpenPGP, key.Public(), commitsig.OpenPGPUserID("alpha")); err != nil {
		t.Errorf("the OpenPGP form is not alpha's key: %v", err)
	}
	if line, _ := SSHKey("alpha", key.Public(), false); !bytes.Equal(k.SSH, line) {
		t.Errorf("the SSH form is %q, want %q", k.SSH, line)
	}
	if k.NextSSH != nil || k.NextOpenPGP != nil {
		t.Error("a staged key outside a rollover")
	}
	if _, err := Files("alpha", Keys{}); err == nil {
		t.Error("Files without a current key: no error")
	}
}

// A Secret that is not the shape gitpeer writes is refused by name: a
// repo writer's extra key would otherwise ride into Flux's trust.
func TestParseRefusesWhatGitpeerDoesNotWrite(t *testing.T) {
	k := keys(t, false)
	good, _ := Files("alpha", k)
	secret := string(good["flux/"+SecretFile])
	cur := string(k.SSH)
	other, _ := SSHKey("alpha", newKey(t).Public(), true)
	for name, tc := range map[string]struct{ data, want string }{
		"extra key":       {strings.Replace(secret, "stringData:\n", "stringData:\n  mallory.sshpub: "+cur+"\n", 1), "stringData.mallory.sshpub"},
		"binary data":     {secret + "data:\n  x: eA==\n", "data:"},
		"no current":      {"apiVersion: v1\nkind: Secret\nstringData:\n  alpha-next.sshpub: " + cur + "\n", "missing"},
		"not yaml":        {"{", "f.yaml"},
		"unknown":         {"apiVersion: v1\nkind: Secret\nsurprise: 1\n", "surprise"},
		"not a key":       {"apiVersion: v1\nkind: Secret\nstringData:\n  alpha.sshpub: hello\n  alpha.asc: x\n", "not an authorized_keys line"},
		"wrong comment":   {strings.Replace(secret, "stringData:\n", "stringData:\n  alpha-next.sshpub: "+cur+"\n", 1), "alpha-next.sshpub: is not written as gitpeer writes"},
		"one form staged": {strings.Replace(secret, "stringData:\n", "stringData:\n  alpha-next.sshpub: "+string(other)+"\n", 1), "a staged key in one format only"},
	} {
		_, err := Parse("f.yaml", "alpha", []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", name, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	files, _ := Files("alpha", keys(f, true))
	f.Add(files["flux/"+SecretFile])
	f.Add([]byte("stringData: {alpha.sshpub: 1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := Parse("f", "alpha", data)
		if err == nil && (k.SSH == nil || k.OpenPGP == nil) {
			t.Fatal("no error and no current key")
		}
	})
}
