package demo

import (
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
)

// checkSignatures verifies, with each cluster's key, the signature of
// every commit a reconciler landed, in format, writes the keys
// `git log --show-signature` needs into dir (an allowed-signers file, or an
// OpenPGP keyring for a GnuPG home of the demo's) and returns the command
// that shows them, and the count.
func (r *Report) checkSignatures(dir string, format commitsig.Format) (string, int, error) {
	keys := map[string]crypto.PublicKey{}
	var entries []commitsig.Entry
	var keyring []byte
	for _, c := range r.Clusters {
		keys[c.ID] = c.Backend.Signer().Public()
		entries = append(entries, commitsig.Entry{Principal: c.ID, Key: c.Backend.Signer().Public()})
		key, err := commitsig.OpenPGPPublicKey(c.Backend.Signer(), commitsig.OpenPGPUserID(c.ID))
		if err != nil {
			return "", 0, err
		}
		keyring = append(keyring, key...)
	}
	var show string
	if format == commitsig.FormatOpenPGP {
		file := filepath.Join(dir, "openpgp-keys.asc")
		if err := os.WriteFile(file, keyring, 0o644); err != nil {
			return "", 0, err
		}
		home := filepath.Join(dir, "gnupg")
		show = fmt.Sprintf("mkdir -m 700 -p %s && GNUPGHOME=%s gpg -q --import %s && GNUPGHOME=%s git -C %s log --show-signature", home, home, file, home, r.Remote)
	} else {
		allowed, err := commitsig.AllowedSigners(entries...)
		if err != nil {
			return "", 0, err
		}
		file := filepath.Join(dir, "allowed_signers")
		if err := os.WriteFile(file, []byte(allowed), 0o644); err != nil {
			return "", 0, err
		}
		show = fmt.Sprintf("git -C %s -c gpg.ssh.allowedSignersFile=%s log --show-signature", r.Remote, file)
	}
	repo, err := gitobj.Open(r.Remote)
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
		if f := commitsig.FormatOf(commit.PGPSignature); err == nil && format != "" && f != format {
			err = fmt.Errorf("signed in %s, not %s", f, format)
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("commit %s of %s: %w", c.Hash[:12], c.Cluster, err))
		}
	}
	return show, len(r.Commits), errors.Join(bad...)
}
