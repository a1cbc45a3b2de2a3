package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/internal/controller/daemon"
	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/test/testgit"
)

// TestStatusGolden prints each case of testdata/status (a repo tree made by
// testdata/status/gen.go) in every format, with --exit-code's status and
// the page of --write.
func TestStatusGolden(t *testing.T) {
	for _, name := range goldenCases(t, "status") {
		input := filepath.Join("testdata", "status", name, "input")
		t.Run(name, func(t *testing.T) {
			for _, format := range statusFormats {
				code, out, stderr := gitpeer(t, "status", input, "-o", format)
				if code != 0 {
					t.Fatalf("-o %s: exit %d: %s", format, code, stderr)
				}
				golden(t, "status", name, format, []byte(out))
			}
			page := filepath.Join(t.TempDir(), "STATUS.md")
			code, out, stderr := gitpeer(t, "status", input, "--exit-code", "--write", page)
			if stderr != page+": written\n" {
				t.Errorf("--write says %q", stderr)
			}
			table, _ := os.ReadFile(filepath.Join("testdata", "status", name, "expected", "table"))
			if !*update && out != string(table) {
				t.Errorf("--write changed what is printed:\n%s", out)
			}
			golden(t, "status", name, "exit-code", []byte(fmt.Sprintln(code)))
			data, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "status", name, "STATUS.md", data)
			if _, _, stderr := gitpeer(t, "status", input, "--write", page); stderr != page+": up to date\n" {
				t.Errorf("second --write says %q", stderr)
			}
		})
	}
}

func TestStatusOfARepositoryURL(t *testing.T) {
	root, remote, work := peeringRepo(t, spec)
	for _, id := range []string{"beta", "alpha", "beta", "alpha"} {
		if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", id, "--repo", remote, "--state-dir", filepath.Join(root, "state", id)); code != 0 {
			t.Fatal(stderr)
		}
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where clones go
	for _, target := range []string{remote, "file://" + remote} {
		code, out, stderr := gitpeer(t, "status", target, "-o", "json", "--exit-code")
		var list struct {
			Items []struct {
				Ready bool
				State string
			}
		}
		err := json.Unmarshal([]byte(out), &list)
		if peerings := list.Items; code != 0 || err != nil || len(peerings) != 1 || !peerings[0].Ready || peerings[0].State != "Ready" {
			t.Fatalf("status %s: exit %d %v\n%s%s", target, code, err, out, stderr)
		}
	}
	// The checkout has not pulled: its status is the one it holds.
	if code, out, _ := gitpeer(t, "status", work, "--exit-code"); code != 1 || !strings.Contains(out, "alpha     beta      Pending  false") {
		t.Fatalf("status of a stale checkout: exit %d\n%s", code, out)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("clones left behind: %v", entries)
	}

	// A branch whose commit holds nothing.
	empty := strings.TrimSpace(git(t, work, "commit-tree", "-m", "empty", strings.TrimSpace(git(t, work, "hash-object", "-t", "tree", "/dev/null"))))
	git(t, work, "push", "origin", empty+":refs/heads/nospec")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"credentials for a checkout", []string{"status", work, "--git-credentials", root}, "--git-credentials applies to a repository URL, and " + work + " is a checkout"},
		{"neither a checkout nor a repository", []string{"status", root}, root + ": no peering spec (want one of peering.cue, peering.yaml, peering.yml) and not a Git repository or URL: pass a clone of the peering repo (git clone URL DIR), the repo's URL, or the path of a bare repository"},
		{"a branch the repository lacks", []string{"status", remote, "--branch", "nope"}, `--branch: branch "nope" does not exist on ` + remote + " (its branches: main, "},
		{"a branch without a spec", []string{"status", remote, "--branch", "nospec"}, "branch nospec has no peering spec"},
		{"a repository URL with credentials in it", []string{"status", "https://user:secret@git.example/peering.git"}, "credentials"},
		{"an unknown format", []string{"status", work, "-o", "xml"}, `-o: "xml" is not one of table, json, yaml, mermaid`},
		{"an unknown flag", []string{"status", work, "--nope"}, "unknown flag: --nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := gitpeer(t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "secret") {
				t.Fatalf("exit %d, want 2; output:\n%s%s\nwant it to contain %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

// TestStatusAndPlanReadARemoteWithCredentials: status and plan clone over
// https:// (basic auth, private CA) and ssh:// (deploy key, known_hosts)
// with --git-credentials as reconcile takes it; a refused credential is an
// error (exit 2) naming its cause, and no secret is printed.
func TestStatusAndPlanReadARemoteWithCredentials(t *testing.T) {
	const password = "pw-5d1e7a20-do-not-leak"
	root, remote, _ := peeringRepo(t, spec)
	if code, _, stderr := gitpeer(t, "reconcile", "--once", "--cluster", "beta", "--repo", remote, "--state-dir", filepath.Join(root, "state", "beta")); code != 0 {
		t.Fatal(stderr)
	}
	deploy := testgit.NewKey(t, "reader", "")
	sshd := testgit.StartSSHD(t, root, deploy)
	https := testgit.StartHTTPS(t, root, testgit.HTTPAuth{Username: "reader", Password: password})
	creds := t.TempDir()
	sshCreds, httpsCreds := filepath.Join(creds, "ssh"), filepath.Join(creds, "https")
	testgit.WriteFiles(t, sshCreds, map[string][]byte{gitauth.IdentityFile: deploy.PEM, gitauth.KnownHostsFile: sshd.KnownHosts})
	testgit.WriteFiles(t, httpsCreds, map[string][]byte{
		gitauth.UsernameFile: []byte("reader"), gitauth.PasswordFile: []byte(password), gitauth.CAFile: https.CACert})

	for _, r := range []struct{ url, creds string }{{sshd.URL("remote.git"), sshCreds}, {https.URL("remote.git"), httpsCreds}} {
		code, out, stderr := gitpeer(t, "status", r.url, "--git-credentials", r.creds)
		if code != 0 || !strings.Contains(out, "alpha     beta      NonceSent") {
			t.Fatalf("status %s: exit %d\n%s%s", r.url, code, out, stderr)
		}
		code, out, stderr = gitpeer(t, "plan", "--cluster", "alpha", r.url, "--git-credentials", r.creds, "--state-dir", filepath.Join(root, "state", "alpha"))
		if code != 1 || !strings.Contains(out, "    alpha: send tenant to beta") {
			t.Fatalf("plan %s: exit %d\n%s%s", r.url, code, out, stderr)
		}
	}

	testgit.WriteFiles(t, httpsCreds, map[string][]byte{gitauth.PasswordFile: []byte("wrong-" + password)})
	code, out, stderr := gitpeer(t, "status", https.URL("remote.git"), "--git-credentials", httpsCreds)
	if code != 2 || !strings.Contains(stderr, "authentication") || strings.Contains(out+stderr, password) {
		t.Fatalf("status with a wrong password: exit %d\n%s%s", code, out, stderr)
	}
}

// TestStatusOfADaemonsCheckoutShowsItsLastPass: on the checkout of a daemon
// whose last pass lost every push, status prints the peerings (read from
// the checkout, which the lost push never reached) and then that pass,
// from the file the daemon keeps beside the checkout.
func TestStatusOfADaemonsCheckoutShowsItsLastPass(t *testing.T) {
	checkout := filepath.Join(t.TempDir(), "checkout")
	if err := os.CopyFS(checkout, os.DirFS(filepath.Join("testdata", "status", "midway", "input"))); err != nil {
		t.Fatal(err)
	}
	_, table, _ := gitpeer(t, "status", checkout)
	if strings.Contains(table, "\nreconciler ") {
		t.Fatalf("a checkout without a daemon shows a reconciler:\n%s", table)
	}

	ended := time.Date(2026, 11, 23, 10, 2, 3, 0, time.UTC)
	write := func(ps daemon.PassStatus) {
		b, err := json.Marshal(ps)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(daemon.StatusFile(checkout), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(daemon.PassStatus{Cluster: "alpha", Result: daemon.ResultFailed, Reason: reasons.PushRejected,
		Message:  "push main to file:///srv/peering.git after 23 attempts in 2m0.1s: push rejected: remote moved on every attempt",
		Attempts: 23, Started: ended.Add(-2 * time.Minute), Ended: ended, FailingSince: ended.Add(-3 * time.Minute),
		RejectedInARow: 2, RetryAt: ended.Add(2 * time.Second)})
	code, out, stderr := gitpeer(t, "status", checkout)
	if code != 0 || !strings.HasPrefix(out, table) {
		t.Fatalf("exit %d, %s; want the peerings first:\n%s", code, stderr, out)
	}
	want := "\nreconciler alpha, last pass: failed (PushRejected) at 2026-11-23 10:02:03Z after 23 push attempts, failing since 2026-11-23 09:59:03Z (2 passes in a row lost every push); next pass at 2026-11-23 10:02:05Z: push main to file:///srv/peering.git after 23 attempts in 2m0.1s: push rejected: remote moved on every attempt\n"
	if got := strings.TrimPrefix(out, table); got != want {
		t.Errorf("after the peerings:\n%s\nwant:\n%s", got, want)
	}
	// -o json stays the peerings alone, for scripts.
	if _, js, _ := gitpeer(t, "status", checkout, "-o", "json"); strings.Contains(js, "PushRejected") {
		t.Errorf("-o json shows the reconciler:\n%s", js)
	}

	write(daemon.PassStatus{Cluster: "alpha", Result: daemon.ResultCommitted, Attempts: 1, Commit: "0123456789abcdef0123",
		Started: ended, Ended: ended.Add(time.Second), LastSuccess: ended.Add(time.Second)})
	_, out, _ = gitpeer(t, "status", checkout)
	if got, want := strings.TrimPrefix(out, table), "\nreconciler alpha, last pass: committed at 2026-11-23 10:02:04Z, commit 0123456789ab\n"; got != want {
		t.Errorf("after a landed pass:\n%s\nwant:\n%s", got, want)
	}
}

// TestStatusOfOneCluster: --cluster shows the peerings a cluster takes part
// in, as consumer or as provider, in every format (the graph: it and its
// peers), --peering one peering; a cluster or peering the spec lacks is an
// error, not an empty list.
func TestStatusOfOneCluster(t *testing.T) {
	input := filepath.Join("testdata", "status", "midway", "input")
	rows := func(out string) []string {
		var got []string
		for _, line := range strings.Split(out, "\n")[1:] {
			if f := strings.Fields(line); len(f) > 2 && !strings.Contains(f[0], ":") {
				got = append(got, f[0]+"/"+f[1])
			}
		}
		return got
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "gamma"}, "alpha/gamma delta/gamma"},
		{[]string{"--cluster", "alpha"}, "alpha/beta alpha/gamma"},
		{[]string{"--cluster", "delta"}, "delta/gamma"},
		{[]string{"--peering", "alpha/gamma"}, "alpha/gamma"},
		{[]string{"--cluster", "gamma", "--peering", "delta/gamma"}, "delta/gamma"},
		{[]string{"--cluster", "beta", "--peering", "delta/gamma"}, ""},
	} {
		code, out, stderr := gitpeer(t, append([]string{"status", input}, tc.args...)...)
		if got := strings.Join(rows(out), " "); code != 0 || got != tc.want {
			t.Errorf("status %v: exit %d, rows %q, want %q\n%s%s", tc.args, code, got, tc.want, out, stderr)
		}
		code, out, stderr = gitpeer(t, append([]string{"status", input, "-o", "json"}, tc.args...)...)
		var list struct {
			Kind  string
			Items []struct{ Consumer, Provider string }
		}
		if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || list.Kind != "PeeringStatusList" || list.Items == nil {
			t.Fatalf("status %v -o json: exit %d %v\n%s%s", tc.args, code, err, out, stderr)
		}
		var got []string
		for _, p := range list.Items {
			got = append(got, p.Consumer+"/"+p.Provider)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("status %v -o json: items %v, want %q", tc.args, got, tc.want)
		}
	}
	_, graph, _ := gitpeer(t, "status", input, "--cluster", "delta", "-o", "mermaid")
	if !strings.Contains(graph, `c0["delta"]`) || !strings.Contains(graph, `c1["gamma"]`) || strings.Contains(graph, `"alpha"`) || strings.Contains(graph, `"beta"`) {
		t.Errorf("--cluster delta -o mermaid, want delta and gamma only:\n%s", graph)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "epsilon"}, `--cluster: "epsilon" is not a cluster of the spec (its clusters: alpha, delta, beta, gamma)`},
		{[]string{"--peering", "gamma/alpha"}, `--peering: "gamma/alpha" is not a peering of the spec (its peerings, consumer/provider: alpha/beta, alpha/gamma, delta/gamma)`},
	} {
		if code, out, stderr := gitpeer(t, append([]string{"status", input}, tc.args...)...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("status %v: exit %d\n%s%s\nwant exit 2 and %q", tc.args, code, out, stderr, tc.want)
		}
	}
	if code, _, _ := gitpeer(t, "status", input, "--cluster", "gamma", "--exit-code"); code != 1 {
		t.Errorf("--exit-code with --cluster gamma, whose peerings are not Ready: exit %d", code)
	}
}
