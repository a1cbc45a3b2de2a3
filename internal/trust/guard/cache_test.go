package guard

import (
	"errors"
	"testing"
)

// A Cache answers as Inspect does, cold and warm, and an answer for some
// bytes says nothing about others: content accepted once and then changed
// to carry a key is refused.
func TestCacheAnswersAsInspect(t *testing.T) {
	m := keys(t)
	contents := [][]byte{
		[]byte("kind: Secret\ndata:\n  nonce: bm9uY2U=\n"),
		append([]byte("kind: Secret\ndata:\n  nonce: bm9uY2U=\n# "), m.edPKCS8...),
		m.rsaPKCS1,
		m.publicKey,
		[]byte("The peering is Ready.\n"),
		[]byte("The peering is Ready.\n" + string(m.ecSEC1)),
		nil,
	}
	c := NewCache()
	for round := range 2 {
		for i, content := range contents {
			wantReason, wantFound := Inspect(content)
			reason, found := c.Inspect(content)
			if reason != wantReason || found != wantFound {
				t.Errorf("round %d, content %d: cache says %q, %v; Inspect %q, %v", round, i, reason, found, wantReason, wantFound)
			}
		}
	}
	var none *Cache
	if _, found := none.Inspect(m.openSSH); !found {
		t.Error("a nil Cache accepted an OpenSSH key")
	}
}

// A Cache's Check refuses what Check refuses, with the same error (the
// path, ErrSecret, the reason), cold and warm: gitsync's check of a commit
// goes through the pass's cache.
func TestCacheChecksAsCheck(t *testing.T) {
	m := keys(t)
	c := NewCache()
	for round := range 2 {
		for i, content := range [][]byte{m.edPKCS8, []byte("kind: Namespace\n")} {
			want, got := Check("clusters/a/x.yaml", content), c.Check("clusters/a/x.yaml", content)
			if (want == nil) != (got == nil) || want != nil && (got.Error() != want.Error() || !errors.Is(got, ErrSecret)) {
				t.Errorf("round %d, content %d: cache says %v; Check %v", round, i, got, want)
			}
		}
	}
}
