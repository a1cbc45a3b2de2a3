package handshake

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{ErrSignatureMismatch, "SignatureVerificationFailed"},
		{ErrMalformedCSR, "InvalidCSR"},
		{ErrCSRSubject, "InvalidCSR"},
		{ErrCSRKey, "InvalidCSR"},
		{ErrMalformedKey, "InvalidPublicKey"},
		{ErrMalformedNonce, "InvalidNonce"},
		{ErrMalformedCertificate, "InvalidCertificate"},
		{ErrCertificateKey, "InvalidCertificate"},
		{ErrCertificateSubject, "InvalidCertificate"},
		{ErrUntrustedCertificate, "UntrustedCertificate"},
		{nil, ""},
		{errors.New("something else"), ""},
	} {
		name := "maps nil to nothing"
		if tc.err != nil {
			name = fmt.Sprintf("maps %q to %q", tc.err, tc.want)
		}
		t.Run(name, func(t *testing.T) {
			if got := Reason(tc.err); got != tc.want {
				t.Errorf("Reason(%v) = %q, want %q", tc.err, got, tc.want)
			}
			wrapped := fmt.Errorf("verify tenant alpha: %w", fmt.Errorf("inner: %w", tc.err))
			if tc.err != nil {
				if got := Reason(wrapped); got != tc.want {
					t.Errorf("Reason(wrapped) = %q, want %q", got, tc.want)
				}
			}
		})
	}
	t.Run("prefers the CSR reason when a key error is wrapped in a CSR error", func(t *testing.T) {
		err := fmt.Errorf("csr: %w", errors.Join(ErrMalformedKey, ErrCSRKey))
		if got := Reason(err); got != "InvalidCSR" {
			t.Errorf("got %q", got)
		}
	})
}

func TestSentinelMessagesAreLowercase(t *testing.T) {
	for _, r := range byError {
		if msg := r.err.Error(); msg != strings.ToLower(msg) {
			t.Errorf("%q is not lowercase", msg)
		}
	}
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"alpha", `"alpha"`},
		{"", `""`},
		{"a\x00b", `"a\x00b"`},
		{strings.Repeat("é", 64), `"` + strings.Repeat("é", 64) + `"`},
		{strings.Repeat("é", 65), `"` + strings.Repeat("é", 64) + `"...`},
	} {
		if got := quote(tc.in); got != tc.want {
			t.Errorf("quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := quoteList([]string{"a", "b", "c", "d", "e", "f"}); got != `["a" "b" "c" "d" ...2 more]` {
		t.Errorf("quoteList = %s", got)
	}
}
