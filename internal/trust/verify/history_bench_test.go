package verify_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"testing"

	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// BenchmarkHistory judges a history of 2000 commits over 30 clusters (about
// 7000 files), each commit changing five files in inboxes and rendered
// trees: the cost must follow what changed, not the repository's size
// (about 1 ms a commit on a 2-core box).
func BenchmarkHistory(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git CLI not installed")
	}
	dir := b.TempDir()
	var stream bytes.Buffer
	for c := range 2000 {
		msg := fmt.Sprintf("c%d", c)
		fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter t <t@example.com> %d +0000\ndata %d\n%s\n", 1700000000+c, len(msg), msg)
		for k := range 5 {
			p := fmt.Sprintf("clusters/c%d/inbox/c%d/f%d.yaml", (c*7+k)%30, (c*13+k)%30, (c+k)%20)
			if k >= 3 {
				p = fmt.Sprintf("clusters/c%d/liqo/x/f%d.yaml", (c*11+k)%30, (c*3+k)%50)
			}
			data := fmt.Sprintf("v: %d %d\n", c, k)
			fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s", p, len(data), data)
		}
		stream.WriteString("\n")
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main", dir}, {"-C", dir, "fast-import", "--quiet"}} {
		cmd := testgit.Command("", args...)
		cmd.Stdin = bytes.NewReader(stream.Bytes())
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for b.Loop() {
		findings, err := verify.History(dir, verify.Options{RequireManifests: true})
		if err != nil {
			b.Fatal(err)
		}
		if len(findings) == 0 {
			b.Fatal("an unsigned history has no findings")
		}
	}
}
