package handshake

import (
	"errors"
	"fmt"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"unicode/utf8"
)

// Sentinel errors. Every error about an input (a key, nonce, signature, CSR
// or certificate) wraps exactly one of them, with a lowercase message naming
// the field and the reason, so callers branch with errors.Is and show the
// message to a user as is. Errors about the caller's own arguments (an empty
// CA name, a lifetime that is not positive) and failures of the random
// source wrap none: they are bugs or outages, not bad input.
var (
	// ErrSignatureMismatch: a nonce signature does not verify with the key.
	ErrSignatureMismatch = errors.New("signature mismatch")
	// ErrMalformedNonce: a nonce is not 88 characters of standard base64
	// encoding exactly 64 bytes.
	ErrMalformedNonce = errors.New("malformed nonce")
	// ErrMalformedKey: a key does not parse, has the wrong PEM framing or
	// type, or is of an unsupported algorithm.
	ErrMalformedKey = errors.New("malformed key")
	// ErrMalformedCSR: a CSR has the wrong PEM framing or type, does not
	// parse, or its self-signature does not verify.
	ErrMalformedCSR = errors.New("malformed csr")
	// ErrCSRSubject: a CSR's subject is not exactly the expected common name
	// and organization.
	ErrCSRSubject = errors.New("csr subject mismatch")
	// ErrCSRKey: a CSR is not for the expected public key.
	ErrCSRKey = errors.New("csr key mismatch")
	// ErrMalformedCertificate: a certificate (or CA bundle) has the wrong PEM
	// framing or type, or does not parse.
	ErrMalformedCertificate = errors.New("malformed certificate")
	// ErrUntrustedCertificate: a certificate does not chain to the CA for
	// client authentication at the given time (unknown issuer, expired, not yet
	// valid, wrong usage), or a CA certificate cannot act as one.
	ErrUntrustedCertificate = errors.New("untrusted certificate")
	// ErrCertificateKey: a certificate is not for the expected public key (or
	// a CA certificate does not match its private key).
	ErrCertificateKey = errors.New("certificate key mismatch")
	// ErrCertificateSubject: a certificate's subject is not the expected
	// common name and organization.
	ErrCertificateSubject = errors.New("certificate subject mismatch")
)

// byError is checked in order, so that an error wrapping several sentinels
// gets the reason of the most specific one.
var byError = []struct {
	err    error
	reason string
}{
	{ErrSignatureMismatch, reasons.SignatureVerificationFailed},
	{ErrMalformedCSR, reasons.InvalidCSR},
	{ErrCSRSubject, reasons.InvalidCSR},
	{ErrCSRKey, reasons.InvalidCSR},
	{ErrMalformedNonce, reasons.InvalidNonce},
	{ErrUntrustedCertificate, reasons.UntrustedCertificate},
	{ErrMalformedCertificate, reasons.InvalidCertificate},
	{ErrCertificateKey, reasons.InvalidCertificate},
	{ErrCertificateSubject, reasons.InvalidCertificate},
	{ErrMalformedKey, reasons.InvalidPublicKey},
}

// Reason maps an error of this package to a status-condition reason (a
// CamelCase word, one of package reasons' constants): ErrSignatureMismatch →
// "SignatureVerificationFailed"; ErrMalformedCSR, ErrCSRSubject, ErrCSRKey →
// "InvalidCSR"; ErrMalformedKey → "InvalidPublicKey"; ErrMalformedNonce →
// "InvalidNonce"; ErrMalformedCertificate, ErrCertificateKey,
// ErrCertificateSubject → "InvalidCertificate"; ErrUntrustedCertificate →
// "UntrustedCertificate". It returns "" for nil and for any other error.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	for _, r := range byError {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return ""
}

// maxQuoted bounds how much of an untrusted value an error message repeats:
// messages end up in status conditions and commit messages, and a hostile CSR
// may carry a megabyte-long common name.
const maxQuoted = 64

// quote renders an untrusted string for an error message: Go-quoted, and cut
// to maxQuoted runes with a trailing "..." when longer.
func quote(s string) string {
	if utf8.RuneCountInString(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	n := 0
	for i := range s {
		if n == maxQuoted {
			return fmt.Sprintf("%q...", s[:i])
		}
		n++
	}
	return fmt.Sprintf("%q", s)
}

// quoteList renders a list of untrusted strings, bounded like quote.
func quoteList(ss []string) string {
	const maxItems = 4
	out := "["
	for i, s := range ss {
		if i == maxItems {
			out += fmt.Sprintf(" ...%d more", len(ss)-maxItems)
			break
		}
		if i > 0 {
			out += " "
		}
		out += quote(s)
	}
	return out + "]"
}
