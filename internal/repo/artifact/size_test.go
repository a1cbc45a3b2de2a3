package artifact_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// TestAnArtifactAboveItsCapIsRefusedBeforeItIsDecoded: every parser of a
// peer's artifact refuses more than layout.MaxArtifactSize bytes as
// Malformed, naming the file and both sizes, whatever the bytes hold.
func TestAnArtifactAboveItsCapIsRefusedBeforeItIsDecoded(t *testing.T) {
	// Valid YAML all the way: a decoder would have to read all of it.
	data := []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: liqo-nonce\n  annotations:\n    pad: " +
		strings.Repeat("a", layout.MaxArtifactSize) + "\n")
	const file = "clusters/alpha/inbox/beta/x.yaml"
	for name, parse := range map[string]func() error{
		"ParseNonce":     func() error { _, err := artifact.ParseNonce(file, data, "alpha"); return err },
		"DecodeTenant":   func() error { _, err := artifact.DecodeTenant(file, data); return err },
		"DecodeIdentity": func() error { _, err := artifact.DecodeIdentity(file, data); return err },
		"DecodeSlice":    func() error { _, err := artifact.DecodeSlice(file, data); return err },
		"VerifySliceRequest": func() error {
			_, err := artifact.VerifySliceRequest(file, data, "x", "alpha", "beta", nil)
			return err
		},
		"VerifySliceAnswer": func() error {
			_, err := artifact.VerifySliceAnswer(file, data, nil, artifact.IdentityCheck{})
			return err
		},
	} {
		err := parse()
		var ae *artifact.Error
		if !errors.As(err, &ae) || ae.Reason != reasons.MalformedArtifact || !errors.Is(err, layout.ErrTooLarge) {
			t.Errorf("%s: %v, want a Malformed *artifact.Error wrapping layout.ErrTooLarge", name, err)
			continue
		}
		if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("%s: %q does not name the file and the cap", name, err)
		}
	}
}
