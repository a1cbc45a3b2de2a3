package handshake_test

import (
	"fmt"
	"time"

	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
)

// The whole control-plane handshake, both sides, with no state kept by the
// provider between its two steps.
func Example() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	providerSecret := []byte("kept in the provider's state directory")

	// Provider: issue a nonce for consumer "cl-consumer".
	nonce := handshake.DeriveNonce(providerSecret, "cl-consumer", 1)

	// Consumer: sign it and build the Tenant's key and CSR.
	key, _ := handshake.GenerateKey()
	sig, _ := handshake.SignNonce(key, nonce)
	pubPEM, _ := handshake.MarshalPublicKey(key.Public())
	csr, _ := handshake.ControlPlaneCSR(key, "cl-consumer")

	// Provider: check the Tenant against a nonce derived again, then sign.
	pub, pubDER, err := handshake.ParsePublicKey(pubPEM)
	if err != nil {
		panic(err)
	}
	fmt.Println("signature:", handshake.VerifyNonce(pub, handshake.DeriveNonce(providerSecret, "cl-consumer", 1), sig))
	fmt.Println("csr:", handshake.CheckControlPlaneCSR(csr, pubDER, "cl-consumer"))
	ca, _, _ := handshake.NewCA("provider-ca", now, 10*365*24*time.Hour)
	cert, _ := ca.SignCSR(csr, now, 365*24*time.Hour)

	// Consumer: check the Identity's certificate before trusting it.
	fmt.Println("certificate:", handshake.VerifyClientCertificate(cert, ca.CertPEM, pubDER, "cl-consumer", handshake.ControlPlaneOrganization, now))

	// A replayed signature over an older epoch's nonce fails.
	err = handshake.VerifyNonce(pub, handshake.DeriveNonce(providerSecret, "cl-consumer", 2), sig)
	fmt.Println("next epoch:", handshake.Reason(err))
	// Output:
	// signature: <nil>
	// csr: <nil>
	// certificate: <nil>
	// next epoch: SignatureVerificationFailed
}

func ExampleResourceSliceCommonName() {
	fmt.Println(handshake.ResourceSliceCommonName("mypool", "cl-consumer"))
	// Output: mypool-573ffa690333
}

func ExampleDeriveNonce() {
	n := handshake.DeriveNonce([]byte("s3cret"), "alpha", 42)
	fmt.Println(n, len(n), handshake.CheckNonce(n))
	// Output: P7nAqOb00/YvjN7Cy6mD8zGLJZhJLSIyJ9ST5W7T5U2rTJ7Tj5Lx0dA3o7eL9WSnuzhPUGo5tmI9f1ZhKuujBA== 88 <nil>
}

func ExampleReason() {
	err := handshake.CheckControlPlaneCSR([]byte("not a csr"), nil, "alpha")
	fmt.Println(err)
	fmt.Println(handshake.Reason(err))
	// Output:
	// csr: is not PEM: malformed csr
	// InvalidCSR
}
