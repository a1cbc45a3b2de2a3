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
