//go:build ignore

// gen.go makes the input trees of the status golden tests: real passes of
// the demo's reconcilers (file backends, a fixed clock) over a spec, cut
// short or run to convergence, then the remote's main branch as files.
// Regenerate with: go run ./cmd/gitpeer/testdata/status/gen.go (from the
// module root), then go test ./cmd/gitpeer/ -run Golden -update, and
// review both diffs.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitpeer/gitpeer/examples"
	"github.com/gitpeer/gitpeer/internal/demo"
)

// now is the clock of every pass: the trees, hence the goldens, do not
// change with the day they are made (keys and signatures do).
var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func main() {
	threeClusters, err := examples.Get("three-clusters")
	if err != nil {
		log.Fatal(err)
	}
	cases := []struct {
		name   string
		files  map[string][]byte
		rounds int
	}{
		// Every peering Ready, delta's bigbatch slice denied by gamma.
		{"converged", threeClusters, 10},
		// One round: nonces sent and answered, no Identity yet.
		{"midway", threeClusters, 1},
		// A token peering whose consumer holds no token: the provider
		// refuses its Tenant (EmptyRefused) and the peering stalls; a
		// second peering waits for a cluster that never published.
		{"stalled", map[string][]byte{"peering.cue": []byte(`clusters: [{id: "alpha"}, {id: "beta"}, {id: "omega"}]
peerings: [
	{consumer: "alpha", provider: "beta", policy: "token"},
	{consumer: "omega", provider: "beta"},
]
`)}, 3},
	}
	for _, c := range cases {
		if err := generate(c.name, c.files, c.rounds); err != nil {
			log.Fatalf("%s: %v", c.name, err)
		}
	}
}

func generate(name string, files map[string][]byte, rounds int) error {
	tmp, err := os.MkdirTemp("", "gitpeer-status-gen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// A cluster that never publishes: run the demo on a spec without it,
	// then put the full spec back.
	seed := files
	full, hasOmega := files["peering.cue"], name == "stalled"
	if hasOmega {
		seed = map[string][]byte{"peering.cue": []byte(`clusters: [{id: "alpha"}, {id: "beta"}]
peerings: [{consumer: "alpha", provider: "beta", policy: "token"}]
`)}
	}
	rep, err := demo.Run(context.Background(), demo.Options{Dir: tmp, Files: seed, MaxRounds: rounds, Now: func() time.Time { return now }}, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (expected for a case cut short)\n", name, err)
	}
	remote := filepath.Join(tmp, "remote.git")
	if rep != nil {
		remote = rep.Remote
	}
	input := filepath.Join("cmd", "gitpeer", "testdata", "status", name, "input")
	if err := os.RemoveAll(input); err != nil {
		return err
	}
	if err := os.MkdirAll(input, 0o755); err != nil {
		return err
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive main | tar -x -C "$2"`, "sh", remote, input)
	archive.Stderr = os.Stderr
	if err := archive.Run(); err != nil {
		return err
	}
	if hasOmega {
		if err := os.WriteFile(filepath.Join(input, "peering.cue"), full, 0o644); err != nil {
			return err
		}
	}
	// status reads the spec and each cluster's cluster.yaml, status.yaml
	// and the manifest signing them; a signed directory is checked file by
	// file as it is read, so the rest can go.
	return filepath.WalkDir(input, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(input, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if rel == "peering.cue" || len(parts) == 3 && parts[0] == "clusters" && keep[parts[2]] {
			return nil
		}
		return os.Remove(p)
	})
}

var keep = map[string]bool{"cluster.yaml": true, "status.yaml": true, "manifest.yaml": true}
