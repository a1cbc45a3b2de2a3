package reconcile

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gitpeer/gitpeer/internal/git/trailer"
)

// A pass's commit subject stays within Git's 72 characters: the steps
// that fit, then how many more, with every step in the body and in the
// trailers; a subject that fits has no body; the same steps give the same
// bytes.
func TestMessageKeepsTheSubjectShort(t *testing.T) {
	many := []string{"issue identity to gamma-west-1", "answer slice gpu of gamma-west-1", "answer slice batch of gamma-west-1", "accept tenant of gamma-west-1"}
	long := "remove " + strings.Repeat("x", 100) + ".yaml"
	for _, c := range []struct {
		name, self string
		steps      []string
		subject    string
		body       bool
	}{
		{"fits", "alpha", []string{"send nonce to beta", "accept identity of gamma"}, "alpha: send nonce to beta; accept identity of gamma", false},
		{"too many", "beta", many, "beta: issue identity to gamma-west-1 and 3 more", true},
		{"too many, two fit", "alpha", []string{"send nonce to beta", "accept identity of gamma", "withdraw nonce from delta", "answer slice a of beta"}, "alpha: send nonce to beta; accept identity of gamma and 2 more", true},
		{"one step too long", "alpha", []string{long}, "alpha: remove " + strings.Repeat("x", 71-len("alpha: remove ")) + "…", true},
		{"a long first step among others", "alpha", []string{long, "send nonce to beta"}, "alpha: remove " + strings.Repeat("x", 71-len("alpha: remove ")-len(" and 1 more")) + "… and 1 more", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := message(c.self, c.steps)
			if msg != message(c.self, append([]string{}, c.steps...)) {
				t.Fatal("the same steps give other bytes")
			}
			subject, rest, _ := strings.Cut(msg, "\n")
			if subject != c.subject || utf8.RuneCountInString(subject) > MaxSubject {
				t.Errorf("subject %q (%d characters), want %q", subject, utf8.RuneCountInString(subject), c.subject)
			}
			if got := trailer.Values(msg, trailer.Step); strings.Join(got, "|") != strings.Join(c.steps, "|") {
				t.Errorf("Gitpeer-Step trailers %q, want %q", got, c.steps)
			}
			if vals := trailer.Values(msg, trailer.Cluster); len(vals) != 1 || vals[0] != c.self {
				t.Errorf("Gitpeer-Cluster trailers %q", vals)
			}
			for _, s := range c.steps {
				if c.body != strings.Contains(rest, "\n- "+s+"\n") {
					t.Errorf("body lists %q: %t, want %t:\n%s", s, !c.body, c.body, msg)
				}
			}
		})
	}
}
