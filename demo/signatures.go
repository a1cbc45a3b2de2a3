package demo

import (
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/commitsig"
)

// checkSignatures verifies, with each cluster's key, the SSH signature of
// every commit a reconciler landed, writes an allowed-signers file for
// `git log --show-signature` into dir and returns its path and the count.
func (r *Report) checkSignatures(dir string) (string, int, error) {
	keys := map[string]crypto.PublicKey{}
	var entries []commitsig.Entry
	for _, c := range r.Clusters {
		keys[c.ID] = c.Backend.Signer().Public()
		entries = append(entries, commitsig.Entry{Principal: c.ID, Key: c.Backend.Signer().Public()})
	}
	allowed, err := commitsig.AllowedSigners(entries...)
	if err != nil {
		return "", 0, err
	}
	file := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(file, []byte(allowed), 0o644); err != nil {
		return "", 0, err
	}
	repo, err := git.PlainOpen(r.Remote)
	if err != nil {
		return "", 0, err
	}
	var bad []error
	for _, c := range r.Commits {
		commit, err := repo.CommitObject(plumbing.NewHash(c.Hash))
		if err != nil {
			return "", 0, fmt.Errorf("commit %s: %w", c.Hash, err)
		}
		who, err := commitsig.Verify(commit, keys)
		if err == nil && who != c.Cluster {
			err = fmt.Errorf("signed by %s, not by %s", who, c.Cluster)
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("commit %s of %s: %w", c.Hash[:12], c.Cluster, err))
		}
	}
	return file, len(r.Commits), errors.Join(bad...)
}
