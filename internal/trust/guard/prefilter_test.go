package guard

import (
	"encoding/pem"
	"testing"
)

// binaryKeyParsed is binaryKey without its firstIsInteger shortcut: what
// it answered before the shortcut, for comparison.
func binaryKeyParsed(b []byte) string {
	if len(b) < 32 || b[0] != 0x30 {
		return binaryKey(b)
	}
	return binaryKeyNoShortcut(b)
}

// The prefilters answer what the full checks answer: binaryKey with its
// shortcut recognises exactly the keys the three parsers do (and skips
// certificates, CSRs and public keys), and content the AWS pattern
// matches always holds "aw" in some case.
func TestPrefiltersAnswerAsTheFullChecks(t *testing.T) {
	m := keys(t)
	der := func(p []byte) []byte {
		b, _ := pem.Decode(p)
		if b == nil {
			t.Fatalf("no PEM block in %q", p)
		}
		return b.Bytes
	}
	for name, b := range map[string][]byte{
		"rsa pkcs1": der(m.rsaPKCS1), "rsa pkcs8": der(m.rsaPKCS8), "ec sec1": der(m.ecSEC1), "ec pkcs8": der(m.ecPKCS8),
		"ed pkcs8": m.edDER, "public key": der(m.publicKey), "certificate": der(m.cert), "csr": der(m.csr),
		"long-form junk": append([]byte{0x30, 0x82, 0x01, 0x00, 0x30}, make([]byte, 40)...),
		"indefinite":     append([]byte{0x30, 0x80, 0x02}, make([]byte, 40)...),
		"short header":   {0x30, 0x84, 0x00},
	} {
		if got, want := binaryKey(b), binaryKeyParsed(b); got != want {
			t.Errorf("%s: binaryKey %q, the parsers %q", name, got, want)
		}
	}
	if binaryKey(der(m.cert)) != "" || binaryKey(m.edDER) == "" {
		t.Error("the certificate is a key, or the key is not")
	}
	for _, s := range []string{"AWS_SECRET_ACCESS_KEY=abcdefghij", "aWſ_secret_access_key: abcdefghij", "Aws_Secret_Access_Kᴋey"} {
		if awsRaw.MatchString(s) && !hasFoldAW([]byte(s)) {
			t.Errorf("%q matches the AWS pattern without an aw", s)
		}
	}
}

func FuzzPrefilters(f *testing.F) {
	m := keys(f)
	f.Add(m.edDER)
	f.Add([]byte("aws_secret_access_key = abcdefghijk"))
	f.Add([]byte{0x30, 0x81, 0x40, 0x02, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := binaryKey(b), binaryKeyParsed(b); got != want {
			t.Fatalf("binaryKey %q, the parsers %q", got, want)
		}
		if awsRaw.Match(b) && !hasFoldAW(b) {
			t.Fatalf("%q matches the AWS pattern without an aw", b)
		}
	})
}
