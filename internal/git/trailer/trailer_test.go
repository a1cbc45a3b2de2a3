package trailer

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/test/testgit"
)

// What Message writes, git reads as trailers, and Values reads back.
func TestGitReadsTheTrailersMessageWrites(t *testing.T) {
	msg := Message("alpha", "send tenant to beta; request slice pool from beta", "send tenant to beta", "request slice pool from beta")
	want := "alpha: send tenant to beta; request slice pool from beta\n\nGitpeer-Cluster: alpha\nGitpeer-Step: send tenant to beta\nGitpeer-Step: request slice pool from beta\n"
	if msg != want {
		t.Fatalf("Message:\n%q\nwant\n%q", msg, want)
	}
	if got := Values(msg, Step); !slices.Equal(got, []string{"send tenant to beta", "request slice pool from beta"}) {
		t.Errorf("Values(Step) = %q", got)
	}
	if got := Values(msg, Cluster); !slices.Equal(got, []string{"alpha"}) {
		t.Errorf("Values(Cluster) = %q", got)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	cmd := testgit.Command("", "interpret-trailers", "--parse")
	cmd.Stdin = strings.NewReader(msg)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "Gitpeer-Cluster: alpha\nGitpeer-Step: send tenant to beta\nGitpeer-Step: request slice pool from beta\n"; string(out) != want {
		t.Errorf("git interpret-trailers --parse:\n%s\nwant\n%s", out, want)
	}
}

// Append adds to the trailer block Message writes, and starts one after a
// message without; git reads the result as trailers either way.
func TestAppendAddsToTheTrailerBlock(t *testing.T) {
	seal := strings.Repeat("ab", 20)
	for _, tc := range []struct{ msg, want string }{
		{Message("alpha", "send tenant to beta", "send tenant to beta"), "alpha: send tenant to beta\n\nGitpeer-Cluster: alpha\nGitpeer-Step: send tenant to beta\nGitpeer-Applied: " + seal + "\n"},
		{"a subject\n\na body line\n", "a subject\n\na body line\n\nGitpeer-Applied: " + seal + "\n"},
		{"a subject", "a subject\n\nGitpeer-Applied: " + seal + "\n"},
		{"Key: a subject that looks like a trailer\n", "Key: a subject that looks like a trailer\n\nGitpeer-Applied: " + seal + "\n"},
	} {
		got := Append(tc.msg, Applied, seal)
		if got != tc.want {
			t.Errorf("Append(%q):\n%q\nwant\n%q", tc.msg, got, tc.want)
		}
		if v := Values(got, Applied); !slices.Equal(v, []string{seal}) {
			t.Errorf("Values(Applied) of %q = %q", got, v)
		}
		if _, err := exec.LookPath("git"); err != nil {
			continue
		}
		cmd := testgit.Command("", "interpret-trailers", "--parse")
		cmd.Stdin = strings.NewReader(got)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "Gitpeer-Applied: "+seal+"\n") {
			t.Errorf("git interpret-trailers --parse of %q:\n%s", got, out)
		}
	}
}
