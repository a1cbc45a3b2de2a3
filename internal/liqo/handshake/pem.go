package handshake

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
)

// PEM block types, as Liqo writes them (pkg/liqo-controller-manager/
// authentication/keys.go and csr.go) and as kubeadm writes CA keys.
const (
	pemPrivateKey         = "PRIVATE KEY"
	pemPublicKey          = "PUBLIC KEY"
	pemCertificateRequest = "CERTIFICATE REQUEST"
	pemCertificate        = "CERTIFICATE"
	pemRSAPrivateKey      = "RSA PRIVATE KEY"
	pemECPrivateKey       = "EC PRIVATE KEY"
	pemECParameters       = "EC PARAMETERS"
)

var pemBegin = []byte("-----BEGIN ")

// pemTrailing says what may follow the last PEM block.
type pemTrailing int

const (
	// trailingNone is Liqo's CSR rule (csr.go checkCSR): pem.Decode must leave
	// no rest at all, so the single line break that ends the END line is the
	// only thing allowed after the block.
	trailingNone pemTrailing = iota
	// trailingSpace also allows blank lines and spaces, which text editors and
	// YAML block scalars add; nothing else.
	trailingSpace
)

// decodePEMBlocks splits data into PEM blocks that follow each other with
// nothing but whitespace between them.
//
// encoding/pem alone is too lenient for input that decides trust: pem.Decode
// silently skips any text before a block, and any malformed block, to return
// the first well-formed one. Two readers could then disagree about what the
// bytes say. So data must start with "-----BEGIN " (not even whitespace before
// it: Liqo's pem.Decode rejects a leading space), each block must be the very
// next thing pem.Decode returns, and PEM headers (RFC 1421 encryption) are
// refused, since nothing in the handshake uses them.
func decodePEMBlocks(data []byte, trailing pemTrailing) ([]*pem.Block, error) {
	if len(data) == 0 {
		return nil, errors.New("is empty")
	}
	if !bytes.HasPrefix(data, pemBegin) {
		if bytes.Contains(data, pemBegin) {
			return nil, errors.New("has data before the PEM block")
		}
		return nil, errors.New("is not PEM")
	}
	var blocks []*pem.Block
	rest := data
	for len(rest) > 0 {
		if len(blocks) > 0 {
			if trailing == trailingNone {
				return nil, fmt.Errorf("has %s after the PEM block", plural(len(rest), "byte"))
			}
			rest = bytes.TrimLeft(rest, " \t\r\n")
			if len(rest) == 0 {
				break
			}
			if !bytes.HasPrefix(rest, pemBegin) {
				return nil, fmt.Errorf("has %s of non-PEM data after PEM block %d", plural(len(rest), "byte"), len(blocks))
			}
		}
		block, next := pem.Decode(rest)
		// A second BEGIN inside what pem.Decode consumed means it skipped a
		// malformed block to reach a later one.
		if block == nil || bytes.Count(rest[:len(rest)-len(next)], pemBegin) != 1 {
			return nil, fmt.Errorf("has a malformed PEM block %d", len(blocks)+1)
		}
		if len(block.Headers) != 0 {
			return nil, fmt.Errorf("has PEM headers in block %d (%s)", len(blocks)+1, quote(block.Type))
		}
		blocks = append(blocks, block)
		rest = next
	}
	return blocks, nil
}

// decodePEMBlock decodes data as exactly one PEM block of type want.
func decodePEMBlock(data []byte, want string, trailing pemTrailing) (*pem.Block, error) {
	blocks, err := decodePEMBlocks(data, trailing)
	if err != nil {
		return nil, err
	}
	if len(blocks) != 1 {
		return nil, fmt.Errorf("has %d PEM blocks, want 1", len(blocks))
	}
	if blocks[0].Type != want {
		return nil, fmt.Errorf("has PEM type %s, want %q", quote(blocks[0].Type), want)
	}
	return blocks[0], nil
}

// plural renders a count with its noun, for messages a user reads.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
