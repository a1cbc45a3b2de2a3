package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/gitpeer/gitpeer/backend/kubernetes"
	"github.com/gitpeer/gitpeer/handshake"
	"github.com/gitpeer/gitpeer/layout"
)

// TestRotateKeyOnTheKubernetesBackend: on a fake API server, rotate-key's
// kubernetes path rotates the key the repo publishes and returns the old
// one, whose statement over the new cluster.yaml verifies against the old
// pin. Run again with the old cluster.yaml still published (the first
// publication was lost), it rotates nothing and signs the same statement
// again with the previous key. A published key that is neither the current
// nor the previous one (another cluster's context) is refused, naming both.
func TestRotateKeyOnTheKubernetesBackend(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	ca, _, err := handshake.NewCA("alpha-ca", now.Add(-time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	opts := kubernetes.Options{ClusterID: "alpha", APIServer: "https://alpha.example:6443", CABundle: ca.CertPEM}
	b, _, err := kubernetes.InitWithClients(ctx, opts, cs.CoreV1(), cs.CertificatesV1())
	if err != nil {
		t.Fatal(err)
	}
	published, err := b.ClusterInfo()
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	old, err := rotateOrResign(ctx, b, published, &log)
	if err != nil {
		t.Fatal(err)
	}
	if fp, _ := handshake.Fingerprint(old.Public()); fp != published.Fingerprint {
		t.Fatalf("rotate-key signs with %s, want the published %s", fp, published.Fingerprint)
	}
	info, _ := b.ClusterInfo()
	if info.Fingerprint == published.Fingerprint || !strings.Contains(log.String(), "rotated alpha: "+published.Fingerprint+" -> "+info.Fingerprint) {
		t.Fatalf("not rotated: %s", log.String())
	}
	if err := layout.SignRotation(info, old); err != nil {
		t.Fatal(err)
	}
	if err := info.VerifyRotation(published.Fingerprint); err != nil {
		t.Fatalf("a peer pinning the old key refuses the statement: %v", err)
	}

	// The cluster.yaml never reached the repo: run again.
	log.Reset()
	again, err := rotateOrResign(ctx, b, published, &log)
	if err != nil {
		t.Fatal(err)
	}
	if fp, _ := handshake.Fingerprint(again.Public()); fp != published.Fingerprint {
		t.Fatalf("run again, rotate-key signs with %s, want the previous %s", fp, published.Fingerprint)
	}
	if now, _ := b.ClusterInfo(); now.Fingerprint != info.Fingerprint || !strings.Contains(log.String(), "rotating nothing") {
		t.Fatalf("run again, rotate-key rotated once more (%s): %s", now.Fingerprint, log.String())
	}

	// Another cluster's cluster.yaml.
	other, _ := handshake.GenerateKey()
	stranger, err := layout.NewClusterInfo("alpha", other.Public(), published.APIServer, ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rotateOrResign(ctx, b, stranger, &log)
	if err == nil || !strings.Contains(err.Error(), stranger.Fingerprint) || !strings.Contains(err.Error(), info.Fingerprint) || !strings.Contains(err.Error(), "--context") {
		t.Fatalf("a cluster.yaml of another key: %v", err)
	}
	if now, _ := b.ClusterInfo(); now.Fingerprint != info.Fingerprint {
		t.Fatal("rotate-key rotated for a cluster.yaml that is not this cluster's")
	}
}

// TestRotateKeyCommandOfTheDeployDocs runs the rotate-key line of
// docs/deploy.md ("Rotating the cluster key") against a checkout where the
// cluster has published nothing: the flags are accepted, and before any
// API call it says what to publish first. The kubernetes backend refuses
// the file backend's --state-dir.
func TestRotateKeyCommandOfTheDeployDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "\n## Rotating the cluster key\n")
	var line string
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "gitpeer rotate-key ") {
			line = l
			break
		}
	}
	if line == "" {
		t.Fatal("docs/deploy.md shows no gitpeer rotate-key line under Rotating the cluster key")
	}
	work := t.TempDir()
	args := strings.Fields(strings.ReplaceAll(line, "~/peering", work))[1:]
	code, _, stderr := gitpeer(t, args...)
	if code == 0 || !strings.Contains(stderr, "clusters/alpha/cluster.yaml") || !strings.Contains(stderr, "gitpeer init --backend kubernetes") {
		t.Fatalf("%s on an empty checkout: %d %s", line, code, stderr)
	}
	code, _, stderr = gitpeer(t, append(args, "--state-dir", work)...)
	if code == 0 || !strings.Contains(stderr, "--state-dir does not apply to --backend kubernetes") {
		t.Fatalf("with --state-dir: %d %s", code, stderr)
	}
}
