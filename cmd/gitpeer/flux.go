package main

import (
	"crypto"
	"fmt"
	"net/url"
	"sort"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/commitsig"
	"github.com/gitpeer/gitpeer/gitauth"
	"github.com/gitpeer/gitpeer/layout"
)

// fluxSource is the Flux GitRepository (and the Secret of its verify key)
// with which cluster id applies only what its reconciler signed: it tracks
// gitpeer/applied/<id>, and spec.verify trusts the cluster key alone. With
// gitSecret, spec.secretRef names the Secret of the Git credentials: the one
// reconcile mounts as --git-credentials, whose keys Flux reads alike.
func fluxSource(id string, pub crypto.PublicKey, url, gitSecret string) ([]byte, string, error) {
	line, err := commitsig.AuthorizedKey(pub, "gitpeer-"+id)
	if err != nil {
		return nil, "", err
	}
	name := "gitpeer-" + id
	secret := map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": name + "-signing", "namespace": "flux-system"},
		"stringData": map[string]any{id + ".sshpub": strings.TrimSpace(line)},
	}
	repo := map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": name, "namespace": "flux-system"},
		"spec": map[string]any{
			"interval": "1m",
			"url":      url,
			"ref":      map[string]any{"branch": layout.AppliedBranch(id)},
			"verify":   map[string]any{"mode": "HEAD", "secretRef": map[string]any{"name": name + "-signing"}},
		},
	}
	if gitSecret != "" {
		repo["spec"].(map[string]any)["secretRef"] = map[string]any{"name": gitSecret}
	}
	var out []byte
	for _, obj := range []any{secret, repo} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, "", err
		}
		out = append(append(out, "---\n"...), data...)
	}
	return out, line, nil
}

// originURL is the fetch URL of remote origin of the working tree dir, ""
// if none, without any credentials it holds: it is printed.
func originURL(dir string) string {
	r, err := gogit.PlainOpen(dir)
	if err != nil {
		return ""
	}
	rem, err := r.Remote("origin")
	if err != nil || len(rem.Config().URLs) == 0 {
		return ""
	}
	u := rem.Config().URLs[0]
	if gitauth.CheckURL(u) == nil {
		return u
	}
	parsed, err := url.Parse(u)
	if err != nil || parsed.User == nil {
		return "" // no URL rather than a secret
	}
	login := parsed.User.Username()
	parsed.User = nil
	if parsed.Scheme == "ssh" && login != "" {
		parsed.User = url.User(login) // the SSH login is no secret
	}
	return parsed.String()
}

func newAllowedSignersCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "allowed-signers [DIR]",
		Short: "Print a git allowed-signers file of every cluster's commit-signing key",
		Long: `allowed-signers prints, for every clusters/<id>/cluster.yaml of the checkout DIR
(default "."), a line of git's gpg.ssh.allowedSignersFile format with
principal <id>: reconcilers sign their commits with their cluster key, so

  gitpeer allowed-signers > allowed_signers
  git -c gpg.ssh.allowedSignersFile=allowed_signers log --show-signature

shows each reconciler's commits as Good "git" signature for <id>.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := dirArg(args)
			tree := layout.NewTree(dir)
			entries, err := tree.ReadDir(layout.ClustersDir)
			if err != nil {
				return fmt.Errorf("%s: %w (give a checkout of the peering repo, which has a clusters/ directory)", dir, err)
			}
			var signers []commitsig.Entry
			for _, e := range entries {
				if !e.IsDir() {
					continue
				}
				ci, err := layout.ReadClusterInfo(tree, e.Name())
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "skipping %s: %v\n", e.Name(), err)
					continue
				}
				pub, err := ci.Key()
				if err != nil {
					return err
				}
				signers = append(signers, commitsig.Entry{Principal: ci.ClusterID, Key: pub})
			}
			sort.Slice(signers, func(i, j int) bool { return signers[i].Principal < signers[j].Principal })
			out, err := commitsig.AllowedSigners(signers...)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), out)
			return err
		},
	}
}
