package file

import (
	"strings"
	"testing"
)

const testMetaPath = "/state/alpha/cluster.key.next.yaml"

// TestParseNextKeyMetaRefusesBadContent: each bad sidecar is an error that
// names the file and the field at fault.
func TestParseNextKeyMetaRefusesBadContent(t *testing.T) {
	fpr := "fingerprint: sha256:" + strings.Repeat("a", 64) + "\n"
	for in, want := range map[string]string{
		"":                                    "no fingerprint",
		"{{{":                                 "malformed (want fingerprint, apiServer and announced)",
		"- a\n- b\n":                          "malformed",
		fpr + "colour: blue\n":                `unknown field "colour"`,
		fpr + fpr:                             "malformed",
		fpr + "apiServer: http://a.example\n": `apiServer: "http://a.example" is not an https URL`,
		fpr + "apiServer: [1]\n":              "malformed",
		fpr + "announced: yesterday\n":        `announced: "yesterday" is not an RFC 3339 time`,
		fpr + "announced: 2026-11-22\n":       `announced: "2026-11-22" is not an RFC 3339 time`,
		fpr + strings.Repeat("#", maxNextKeyMeta): "more than 4096 bytes",
	} {
		_, _, err := parseNextKeyMeta(testMetaPath, []byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), testMetaPath+": ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q naming the file", in, err, want)
		}
	}
	m, at, err := parseNextKeyMeta(testMetaPath, []byte(fpr+"apiServer: https://a.example:6443\nannounced: \"2026-11-22T12:00:00.5Z\"\n"))
	if err != nil || m.APIServer != "https://a.example:6443" || at.UnixMilli()%1000 != 500 {
		t.Fatalf("a good sidecar: %+v %s %v", m, at, err)
	}
}

// FuzzParseNextKeyMeta: whatever the sidecar holds, parsing returns an
// error naming the file or a sidecar with a fingerprint, never panics.
func FuzzParseNextKeyMeta(f *testing.F) {
	for _, seed := range []string{
		"",
		"fingerprint: sha256:abc\n",
		"fingerprint: sha256:abc\napiServer: https://a.example:6443\nannounced: \"2026-11-22T12:00:00Z\"\n",
		"fingerprint: sha256:abc\nannounced: 2026-11-22T12:00:00Z\n",
		"fingerprint: &a [*a]\n",
		"fingerprint: !!binary AAAA\n",
		"{fingerprint: 1, apiServer: null}",
		"\x00\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, _, err := parseNextKeyMeta(testMetaPath, data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), testMetaPath+": ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if m.Fingerprint == "" {
			t.Fatal("accepted a sidecar without fingerprint")
		}
	})
}
