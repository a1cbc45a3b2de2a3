package handshake

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
)

const (
	consumer = "cl-consumer"
	slice    = "mypool"
)

func TestControlPlaneCSRIsDeterministic(t *testing.T) {
	for _, kind := range []string{"ed25519", "rsa"} {
		t.Run("gives byte-identical CSRs for the same "+kind+" key", func(t *testing.T) {
			key := testKey(t, kind, "a")
			a, err := ControlPlaneCSR(key, consumer)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ControlPlaneCSR(key, consumer)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Error("CSRs differ")
			}
			c, _ := ResourceSliceCSR(key, slice, consumer)
			d, _ := ResourceSliceCSR(key, slice, consumer)
			if !bytes.Equal(c, d) {
				t.Error("resource slice CSRs differ")
			}
		})
	}
}

func TestCSRShape(t *testing.T) {
	wantAlg := map[string]x509.SignatureAlgorithm{
		"ed25519": x509.PureEd25519,
		"rsa":     x509.SHA256WithRSA,
		"p256":    x509.ECDSAWithSHA256,
		"p384":    x509.ECDSAWithSHA384,
		"p521":    x509.ECDSAWithSHA512,
	}
	for _, kind := range supportedKinds {
		key := testKey(t, kind, "a")
		cp, err := ControlPlaneCSR(key, consumer)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := ResourceSliceCSR(key, slice, consumer)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			csr    []byte
			cn, on string
		}{
			{"control-plane", cp, consumer, "liqo.io"},
			{"resource-slice", rs, "mypool-573ffa690333", consumer},
		} {
			t.Run(fmt.Sprintf("a %s CSR for a %s key has the subject O=%s, CN=%s and nothing else", tc.name, kind, tc.on, tc.cn), func(t *testing.T) {
				if !bytes.HasPrefix(tc.csr, []byte("-----BEGIN CERTIFICATE REQUEST-----\n")) {
					t.Errorf("does not start with the BEGIN line: %q", tc.csr[:20])
				}
				if !bytes.HasSuffix(tc.csr, []byte("-----END CERTIFICATE REQUEST-----\n")) || bytes.HasSuffix(tc.csr, []byte("\n\n")) {
					t.Errorf("does not end with the END line and exactly one line break")
				}
				block, rest := pem.Decode(tc.csr)
				if block == nil || len(rest) != 0 {
					t.Fatalf("pem.Decode leaves %q", rest)
				}
				csr, err := x509.ParseCertificateRequest(block.Bytes)
				if err != nil {
					t.Fatal(err)
				}
				if err := csr.CheckSignature(); err != nil {
					t.Error(err)
				}
				if csr.SignatureAlgorithm != wantAlg[kind] {
					t.Errorf("signature algorithm %v, want %v", csr.SignatureAlgorithm, wantAlg[kind])
				}
				if len(csr.Extensions) != 0 || len(csr.Attributes) != 0 {
					t.Errorf("has extensions %v or attributes %v", csr.Extensions, csr.Attributes)
				}
				// Decode the raw subject with encoding/asn1, not x509:
				// exactly two single-valued RDNs, O then CN as Liqo's
				// pkix.Name.ToRDNSequence orders them.
				var rdns pkix.RDNSequence
				if rest, err := asn1.Unmarshal(csr.RawSubject, &rdns); err != nil || len(rest) != 0 {
					t.Fatalf("raw subject: %v, rest %x", err, rest)
				}
				want := pkix.RDNSequence{
					{{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: tc.on}},
					{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: tc.cn}},
				}
				if fmt.Sprint(rdns) != fmt.Sprint(want) || len(rdns) != 2 || len(rdns[0]) != 1 || len(rdns[1]) != 1 {
					t.Errorf("raw subject is %v, want %v", rdns, want)
				}
				if !bytes.Equal(pkixDER(t, csr.PublicKey), pkixDER(t, key.Public())) {
					t.Error("CSR is for another key")
				}
			})
		}
	}
}

func TestCSRGenerationRefuses(t *testing.T) {
	key := testKey(t, "ed25519", "a")
	_, err := ControlPlaneCSR(key, "")
	wantErr(t, err, ErrCSRSubject)
	_, err = ResourceSliceCSR(key, "", consumer)
	wantErr(t, err, ErrCSRSubject)
	_, err = ResourceSliceCSR(key, slice, "")
	wantErr(t, err, ErrCSRSubject)
	_, err = ControlPlaneCSR(nil, consumer)
	wantErr(t, err, ErrMalformedKey)
	_, err = ControlPlaneCSR(testKey(t, "rsa1024", "a"), consumer)
	wantErr(t, err, ErrMalformedKey)
}

func TestResourceSliceCommonName(t *testing.T) {
	t.Run("matches liqo-auth.md's example, computed with sha256sum", func(t *testing.T) {
		// printf cl-consumer | sha256sum → 573ffa6903339ad3…
		if got := ResourceSliceCommonName("mypool", "cl-consumer"); got != "mypool-573ffa690333" {
			t.Errorf("got %s", got)
		}
	})
	for _, id := range []string{"a", "cl-consumer", "0f6b5c2a-9d5e-4a61-b0d3-7b1f7e0a4c55", ""} {
		t.Run(fmt.Sprintf("is the slice name and 12 lowercase hex digits of sha256(%q)", id), func(t *testing.T) {
			got := ResourceSliceCommonName("pool", id)
			h := sha256.New()
			h.Write([]byte(id))
			want := fmt.Sprintf("pool-%x", h.Sum(nil)[:6])
			if got != want {
				t.Errorf("got %s, want %s", got, want)
			}
			suffix := strings.TrimPrefix(got, "pool-")
			if len(suffix) != 12 || strings.ToLower(suffix) != suffix {
				t.Errorf("suffix %q is not 12 lowercase characters", suffix)
			}
			if _, err := hex.DecodeString(suffix); err != nil {
				t.Errorf("suffix %q is not hex", suffix)
			}
		})
	}
}

// csrCases are the framing, parsing and signature cases that both CSR checks
// share, built from a valid CSR.
func csrFramingCases(t *testing.T, valid []byte) []struct {
	name string
	csr  []byte
	want error
} {
	t.Helper()
	certLike := retype(t, valid, "CERTIFICATE")
	// The signature is the last field of the DER; flipping its last byte
	// keeps the structure intact.
	badSig := reencode(t, valid, func(d []byte) []byte { d[len(d)-1] ^= 0x01; return d })
	broken := reencode(t, valid, func(d []byte) []byte { return d[:len(d)/2] })
	withHeaders := func() []byte {
		b, _ := pem.Decode(valid)
		b.Headers = map[string]string{"Comment": "hi"}
		return pem.EncodeToMemory(b)
	}()
	crlf := bytes.ReplaceAll(valid, []byte("\n"), []byte("\r\n"))
	return []struct {
		name string
		csr  []byte
		want error
	}{
		{"accepts a CSR without its final line break, as pem.Decode leaves no rest", bytes.TrimSuffix(valid, []byte("\n")), nil},
		{"accepts CRLF line ends, as pem.Decode does", crlf, nil},
		{"rejects an extra line break, as Liqo does", append(bytes.Clone(valid), '\n'), ErrMalformedCSR},
		{"rejects a leading space, as Liqo does", append([]byte(" "), valid...), ErrMalformedCSR},
		{"rejects a leading text line, which Liqo would skip", append([]byte("csr:\n"), valid...), ErrMalformedCSR},
		{"rejects two PEM blocks", append(bytes.Clone(valid), valid...), ErrMalformedCSR},
		{"rejects trailing garbage", append(bytes.Clone(valid), "x"...), ErrMalformedCSR},
		{"rejects a CERTIFICATE block", certLike, ErrMalformedCSR},
		{"rejects PEM headers", withHeaders, ErrMalformedCSR},
		{"rejects broken DER", broken, ErrMalformedCSR},
		{"rejects a bad self-signature", badSig, ErrMalformedCSR},
		{"rejects empty input", nil, ErrMalformedCSR},
		{"rejects bare DER", func() []byte { b, _ := pem.Decode(valid); return b.Bytes }(), ErrMalformedCSR},
	}
}

func TestCheckControlPlaneCSR(t *testing.T) {
	key := testKey(t, "ed25519", "a")
	pubDER := pkixDER(t, key.Public())
	valid, err := ControlPlaneCSR(key, consumer)
	if err != nil {
		t.Fatal(err)
	}
	otherCluster, _ := ControlPlaneCSR(testKey(t, "ed25519", "b"), consumer)

	type tc = struct {
		name   string
		csr    []byte
		pubDER []byte
		id     string
		want   error
	}
	cases := []tc{
		{name: "accepts a valid CSR", csr: valid, want: nil},
		{name: "rejects another common name", csr: rawCSR(t, key, pkix.Name{CommonName: "mallory", Organization: []string{"liqo.io"}}), want: ErrCSRSubject},
		{name: "rejects a CSR for another consumer id", csr: valid, id: "cl-other", want: ErrCSRSubject},
		{name: "rejects a CSR without organization, where Liqo panics", csr: rawCSR(t, key, pkix.Name{CommonName: consumer}), want: ErrCSRSubject},
		{name: "rejects two organizations", csr: rawCSR(t, key, pkix.Name{CommonName: consumer, Organization: []string{"liqo.io", "system:masters"}}), want: ErrCSRSubject},
		{name: "rejects an organization other than liqo.io", csr: rawCSR(t, key, pkix.Name{CommonName: consumer, Organization: []string{"system:masters"}}), want: ErrCSRSubject},
		{name: "rejects an extra organizational unit", csr: rawCSR(t, key, pkix.Name{CommonName: consumer, Organization: []string{"liqo.io"}, OrganizationalUnit: []string{"x"}}), want: ErrCSRSubject},
		{name: "rejects two common names", csr: rawCSR(t, key, pkix.Name{Organization: []string{"liqo.io"}, ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidCommonName, Value: "mallory"}, {Type: oidCommonName, Value: consumer}}}), want: ErrCSRSubject},
		{name: "rejects an empty consumer id", csr: valid, id: "-", want: ErrCSRSubject},
		{name: "rejects the key of another cluster", csr: otherCluster, want: ErrCSRKey},
		{name: "rejects an rsa CSR against an ed25519 key", csr: mustCSR(t, testKey(t, "rsa", "a")), want: ErrCSRKey},
		{name: "rejects an empty expected key", csr: valid, pubDER: []byte{}, want: ErrCSRKey},
	}
	for _, f := range csrFramingCases(t, valid) {
		cases = append(cases, tc{name: f.name, csr: f.csr, want: f.want})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pd := pubDER
			if c.pubDER != nil {
				pd = c.pubDER
			}
			id := consumer
			switch c.id {
			case "":
			case "-":
				id = ""
			default:
				id = c.id
			}
			err := CheckControlPlaneCSR(c.csr, pd, id)
			wantErr(t, err, c.want)
			if c.want != nil && Reason(err) != "InvalidCSR" {
				t.Errorf("Reason = %q, want InvalidCSR", Reason(err))
			}
		})
	}

	for _, kind := range supportedKinds {
		t.Run("accepts a valid CSR for a "+kind+" key", func(t *testing.T) {
			k := testKey(t, kind, "a")
			wantErr(t, CheckControlPlaneCSR(mustCSR(t, k), pkixDER(t, k.Public()), consumer), nil)
		})
	}

	t.Run("names the field and the reason", func(t *testing.T) {
		bad := rawCSR(t, key, pkix.Name{CommonName: "mallory", Organization: []string{"liqo.io"}})
		err := CheckControlPlaneCSR(bad, pubDER, "alpha")
		if want := `csr: subject common name is "mallory", want "alpha": csr subject mismatch`; err == nil || err.Error() != want {
			t.Errorf("error = %v, want %s", err, want)
		}
	})
	t.Run("cuts long hostile values in messages", func(t *testing.T) {
		bad := rawCSR(t, key, pkix.Name{CommonName: strings.Repeat("m", 10000), Organization: []string{"liqo.io"}})
		err := CheckControlPlaneCSR(bad, pubDER, consumer)
		wantErr(t, err, ErrCSRSubject)
		if len(err.Error()) > 300 {
			t.Errorf("message is %d bytes long", len(err.Error()))
		}
	})
}

func mustCSR(t testing.TB, key crypto.Signer) []byte {
	t.Helper()
	csr, err := ControlPlaneCSR(key, consumer)
	if err != nil {
		t.Fatal(err)
	}
	return csr
}

func TestCheckResourceSliceCSR(t *testing.T) {
	key := testKey(t, "ed25519", "a")
	pubDER := pkixDER(t, key.Public())
	valid, err := ResourceSliceCSR(key, slice, consumer)
	if err != nil {
		t.Fatal(err)
	}
	cn := ResourceSliceCommonName(slice, consumer)
	otherCluster, _ := ResourceSliceCSR(testKey(t, "ed25519", "b"), slice, consumer)
	otherSlice, _ := ResourceSliceCSR(key, "other", consumer)
	otherConsumer, _ := ResourceSliceCSR(key, slice, "cl-other")
	controlPlane, _ := ControlPlaneCSR(key, consumer)

	type tc = struct {
		name string
		csr  []byte
		want error
	}
	cases := []tc{
		{"accepts a valid CSR", valid, nil},
		{"rejects a CSR for another slice", otherSlice, ErrCSRSubject},
		{"rejects a CSR of another consumer", otherConsumer, ErrCSRSubject},
		{"rejects a control-plane CSR", controlPlane, ErrCSRSubject},
		{"rejects the right common name with organization liqo.io", rawCSR(t, key, pkix.Name{CommonName: cn, Organization: []string{"liqo.io"}}), ErrCSRSubject},
		{"rejects a CSR without organization", rawCSR(t, key, pkix.Name{CommonName: cn}), ErrCSRSubject},
		{"rejects two organizations", rawCSR(t, key, pkix.Name{CommonName: cn, Organization: []string{consumer, "system:masters"}}), ErrCSRSubject},
		{"rejects the key of another cluster", otherCluster, ErrCSRKey},
	}
	for _, f := range csrFramingCases(t, valid) {
		cases = append(cases, tc{f.name, f.csr, f.want})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckResourceSliceCSR(c.csr, pubDER, slice, consumer)
			wantErr(t, err, c.want)
		})
	}
	t.Run("rejects an empty slice name", func(t *testing.T) {
		wantErr(t, CheckResourceSliceCSR(valid, pubDER, "", consumer), ErrCSRSubject)
	})
	t.Run("rejects an empty expected key, unlike Liqo under TolerateNoHandshake", func(t *testing.T) {
		wantErr(t, CheckResourceSliceCSR(valid, nil, slice, consumer), ErrCSRKey)
	})
}
