package gitsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// memSeals is a SealKeeper in memory; RecordSeal fails with fail when set,
// and records what the remote's applied branch was when it was called.
type memSeals struct {
	t      *testing.T
	bare   string
	last   string
	fail   error
	before []string // the remote applied head at each RecordSeal
}

func (m *memSeals) LastSeal(context.Context) (string, error) { return m.last, nil }

func (m *memSeals) RecordSeal(_ context.Context, commit string) error {
	head, _ := gitOutput(m.bare, "rev-parse", "-q", "--verify", appliedRef)
	m.before = append(m.before, head)
	if m.fail != nil {
		return m.fail
	}
	m.last = commit
	return nil
}

// openSealed opens alpha's clone of bare with its seals kept in memory.
func openSealed(t *testing.T, bare string) (*Repo, *memSeals) {
	t.Helper()
	seals := &memSeals{t: t, bare: bare}
	opts := appliedOptions(t, bare)
	opts.Applied.Seals = seals
	alpha, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return alpha, seals
}

// sealing is a tree pass that commits clusters/alpha/cluster.yaml with
// content and seals exactly seal; err, when set, fails it instead.
func sealing(content string, seal map[string]string, err error) TreePassFunc {
	return func(context.Context, *TreeFS) (*Change, error) {
		if err != nil {
			return nil, err
		}
		ch := &Change{
			Writes:  map[string][]byte{"clusters/alpha/cluster.yaml": []byte(content)},
			Message: "alpha: publish\n\nGitpeer-Cluster: alpha\n",
			Seal:    map[string][]byte{},
		}
		for k, v := range seal {
			ch.Seal[k] = []byte(v)
		}
		return ch, nil
	}
}

// TestASyncPutsTheNewestSealBackBeforeItsPass: a seal is recorded before it
// is pushed; a writer who points the applied branch at an older seal (as
// validly signed) has it replaced before the next pass runs, also when that
// pass fails.
func TestASyncPutsTheNewestSealBackBeforeItsPass(t *testing.T) {
	bare := newBare(t)
	alpha, seals := openSealed(t, bare)
	ctx := context.Background()
	sync := func(pass TreePassFunc) (Result, error) { return alpha.SyncTree(ctx, pass) }

	first, err := sync(sealing("v1\n", map[string]string{"clusters/alpha/a.yaml": "a\n"}, nil))
	if err != nil || !first.Sealed {
		t.Fatalf("first Sync: %+v, %v", first, err)
	}
	second, err := sync(sealing("v2\n", map[string]string{"clusters/alpha/b.yaml": "b\n"}, nil))
	if err != nil || !second.Sealed || second.Applied == first.Applied {
		t.Fatalf("second Sync: %+v, %v", second, err)
	}
	if seals.last != second.Applied {
		t.Fatalf("recorded seal %s, want %s", seals.last, second.Applied)
	}
	if len(seals.before) != 2 || seals.before[1] != first.Applied {
		t.Errorf("RecordSeal saw the remote applied branch at %q; want it recorded before the push, while the branch was at %s", seals.before, first.Applied)
	}
	if got := appliedFiles(t, bare); got != "100644 clusters/alpha/b.yaml" {
		t.Errorf("applied tree %q, want exactly the pass's seal", got)
	}

	runGit(t, bare, "update-ref", appliedRef, first.Applied)
	res, err := sync(sealing("", nil, errors.New("cluster.yaml does not match the backend")))
	if err == nil {
		t.Fatal("the failing pass succeeded")
	}
	if head := runGit(t, bare, "rev-parse", appliedRef); head != second.Applied || res.AppliedRestored != first.Applied {
		t.Fatalf("after a failing pass the applied branch is at %s (restored from %q); want the newest seal %s, restored from %s",
			head, res.AppliedRestored, second.Applied, first.Applied)
	}
	// Settled: nothing to restore, nothing to seal anew.
	res, err = sync(sealing("v2\n", map[string]string{"clusters/alpha/b.yaml": "b\n"}, nil))
	if err != nil || res.Sealed || res.AppliedRestored != "" || res.Applied != second.Applied {
		t.Fatalf("settled Sync: %+v, %v", res, err)
	}
}

// TestASealThatCannotBeRecordedIsNotPushed: a seal the backend did not
// record would not be restored by the next pass, so it is not pushed.
func TestASealThatCannotBeRecordedIsNotPushed(t *testing.T) {
	bare := newBare(t)
	alpha, seals := openSealed(t, bare)
	first, err := alpha.SyncTree(context.Background(), sealing("v1\n", map[string]string{"clusters/alpha/a.yaml": "a\n"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	seals.fail = errors.New("pins: Secret gitpeer-pins: forbidden")
	_, err = alpha.SyncTree(context.Background(), sealing("v2\n", map[string]string{"clusters/alpha/b.yaml": "b\n"}, nil))
	if err == nil || !strings.Contains(err.Error(), "record seal") || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("Sync = %v, want the recording's error", err)
	}
	if head := runGit(t, bare, "rev-parse", appliedRef); head != first.Applied {
		t.Errorf("the applied branch moved to %s, a seal the backend did not record", head)
	}
}

// TestASealHoldsNoInboxDotFileOrOtherCluster: a pass's Seal is still held
// to the applied tree's structural rules; one with nothing left holds the
// branch.
func TestASealHoldsNoInboxDotFileOrOtherCluster(t *testing.T) {
	bare := newBare(t)
	alpha := openApplied(t, bare)
	res, err := alpha.SyncTree(context.Background(), sealing("v1\n", map[string]string{
		"clusters/alpha/kustomization.yaml":       "k\n",
		"clusters/alpha/inbox/beta/tenant.yaml":   "t\n",
		"clusters/alpha/.sourceignore":            "*\n",
		"clusters/alpha/liqo/.argocd-source.yaml": "x\n",
		"clusters/beta/rbac.yaml":                 "r\n",
		"peering.cue":                             "p\n",
	}, nil))
	if err != nil || !res.Sealed {
		t.Fatalf("Sync: %+v, %v", res, err)
	}
	if got := appliedFiles(t, bare); got != "100644 clusters/alpha/kustomization.yaml" {
		t.Errorf("applied tree:\n%s\nwant the kustomization alone", got)
	}
	res, err = alpha.SyncTree(context.Background(), sealing("v2\n", map[string]string{"clusters/alpha/inbox/beta/tenant.yaml": "t\n"}, nil))
	if err != nil || res.AppliedHeld == "" || res.Sealed {
		t.Fatalf("a Seal with nothing applicable: %+v, %v; want the branch held", res, err)
	}
}

// TestASealWhosePushFailedIsNotRestored: a seal is recorded before the
// atomic push of its commit and itself; when the host refuses that push,
// the recorded seal is of a commit the shared branch never held, and the
// next Sync does not put it on the applied branch (its pass seals anew).
func TestASealWhosePushFailedIsNotRestored(t *testing.T) {
	bare := newBare(t)
	alpha, seals := openSealed(t, bare)
	ctx := context.Background()
	first, err := alpha.SyncTree(ctx, sealing("v1\n", map[string]string{"clusters/alpha/a.yaml": "a\n"}, nil))
	if err != nil || !first.Sealed {
		t.Fatalf("first Sync: %+v, %v", first, err)
	}
	hook := filepath.Join(bare, "hooks", "pre-receive")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'closed for maintenance' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := alpha.SyncTree(ctx, sealing("v2\n", map[string]string{"clusters/alpha/b.yaml": "b\n"}, nil)); err == nil || !strings.Contains(err.Error(), "closed for maintenance") {
		t.Fatalf("Sync to a host refusing pushes = %v, want the host's message", err)
	}
	orphan := seals.last
	if orphan == first.Applied {
		t.Fatal("the refused push's seal was not recorded first")
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	res, err := alpha.SyncTree(ctx, sealing("", nil, errors.New("spec does not load")))
	if err == nil {
		t.Fatal("the failing pass succeeded")
	}
	if head := runGit(t, bare, "rev-parse", appliedRef); head != first.Applied || res.AppliedRestored != "" {
		t.Fatalf("applied branch at %s (restored from %q), want it left at %s: the recorded seal %s is of a commit main never held",
			head, res.AppliedRestored, first.Applied, orphan)
	}
	res, err = alpha.SyncTree(ctx, sealing("v2\n", map[string]string{"clusters/alpha/b.yaml": "b\n"}, nil))
	if err != nil || !res.Sealed || seals.last != res.Applied {
		t.Fatalf("Sync after the host reopened: %+v, %v (recorded %s)", res, err, seals.last)
	}
	if p := runGit(t, bare, "log", "-1", "--format=%P", appliedRef); p != runGit(t, bare, "rev-parse", "main") {
		t.Errorf("the seal's parent is %s, want main", p)
	}
}
