package main

import (
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/fluxtrust"
)

// fluxSource is the Flux GitRepository (and the Secret of its verify key)
// with which cluster id applies only what its reconciler signed: it tracks
// gitpeer/applied/<id>, and spec.verify trusts the cluster key alone, in the
// format the reconciler signs in: an authorized_keys line under
// <id>.sshpub, or the armored OpenPGP key under <id>.asc (source-controller
// reads both). With gitSecret, spec.secretRef names the Secret of the Git
// credentials: the one reconcile mounts as --git-credentials, whose keys
// Flux reads alike. It also returns the verify key as printed.
func fluxSource(id string, key crypto.Signer, format commitsig.Format, url, gitSecret string) ([]byte, string, error) {
	name := "gitpeer-" + id
	file := fluxtrust.KeyName(id, format, false)
	value, err := fluxtrust.Key(id, key, format, false)
	if err != nil {
		return nil, "", err
	}
	secret := map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": fluxtrust.SecretName, "namespace": fluxtrust.Namespace},
		"stringData": map[string]any{file: string(value)},
	}
	repo := map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": name, "namespace": "flux-system"},
		"spec": map[string]any{
			"interval": "1m",
			"url":      url,
			"ref":      map[string]any{"branch": layout.AppliedBranch(id)},
			"verify":   map[string]any{"mode": "HEAD", "secretRef": map[string]any{"name": fluxtrust.SecretName}},
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
	return out, string(value), nil
}

// originURL is the fetch URL of remote origin of the working tree dir, ""
// if none, without any credentials it holds: it is printed.
func originURL(dir string) string {
	r, err := gitobj.Open(dir)
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

// fluxURL is the URL Flux's GitRepository takes for a Git remote u: u
// itself, or for an scp-like user@host:path, which source-controller
// refuses ("scheme not supported"; it takes ssh:// and https:// URLs
// only), the ssh:// URL ssh://user@host/path. converted reports the
// second case. The scp path is relative to the login's home directory, as
// ssh:// paths are not: on GitHub, GitLab and Gitea both name the same
// repository, on a plain SSH server only an absolute scp path does.
func fluxURL(u string) (flux string, converted bool) {
	if strings.Contains(u, "://") || !scpLike(u) {
		return u, false
	}
	host, p, _ := strings.Cut(u, ":")
	return "ssh://" + host + "/" + strings.TrimPrefix(p, "/"), true
}

// allowedSignersOptions are allowed-signers's flags: the format to print
// and the revision to read.
type allowedSignersOptions struct {
	format, ref string
}

func newAllowedSignersCmd() *cobra.Command {
	o := &allowedSignersOptions{}
	cmd := &cobra.Command{
		Use:   "allowed-signers [DIR] [--format ssh|openpgp]",
		Short: "Print every cluster's commit-signing key: a git allowed-signers file, or an OpenPGP keyring",
		Long: `allowed-signers prints the commit-signing key of every cluster published in
the checkout DIR (default "."): reconcilers sign their commits with their
cluster key, the Ed25519 key of clusters/<id>/cluster.yaml.

--format ssh (default): a line of git's gpg.ssh.allowedSignersFile format per
cluster, with principal <id>, so that

  gitpeer allowed-signers > allowed_signers
  git -c gpg.ssh.allowedSignersFile=allowed_signers log --show-signature

shows each reconciler's commits as Good "git" signature for <id>.

--format openpgp: the armored OpenPGP keys of the clusters that sign with
OpenPGP (reconcile --signing-format openpgp), as they publish them in
clusters/<id>/openpgp.asc, on stdout: a keyring for gpg --import and argocd
gpg add. Each key is checked first against the Ed25519 key of the cluster's
cluster.yaml: it must be the OpenPGP key derived from it (gpg.format words:
a v4 EdDSA key created at the Unix epoch), self-signed for user ID "gitpeer
cluster <id>", and nothing else; a key that is not is refused, naming the
file and the reason, and nothing is printed. Stderr lists, per cluster, the
key ID Argo CD's AppProject (sourceIntegrity gpg.keys) and its
argocd-gpg-keys-cm take, and the fingerprint GnuPG prints:

  gitpeer allowed-signers --format openpgp > gitpeer-keys.asc
  gpg --import gitpeer-keys.asc && git log --show-signature

` + committedTreeHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.Flags().StringVar(&o.format, "format", string(commitsig.FormatSSH), "ssh (git allowed signers) or openpgp (armored OpenPGP keys), as git's gpg.format")
	cmd.Flags().StringVar(&o.ref, "ref", "", refFlagUsage)
	return cmd
}

// run is allowed-signers's body: it prints the keys of the clusters
// published in the repo of args, in --format.
func (o *allowedSignersOptions) run(cmd *cobra.Command, args []string) error {
	f, err := commitsig.ParseFormat(o.format)
	if err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	src, err := openLocal(dirArg(args), o.ref, "--ref")
	if err != nil {
		return err
	}
	defer src.Close()
	infos, err := readClusterInfos(cmd, src)
	if err != nil {
		return err
	}
	if f == commitsig.FormatOpenPGP {
		return printOpenPGPKeys(cmd, src.Tree, infos)
	}
	var signers []commitsig.Entry
	for _, ci := range infos {
		pub, err := ci.Key()
		if err != nil {
			return err
		}
		signers = append(signers, commitsig.Entry{Principal: ci.ClusterID, Key: pub})
	}
	out, err := commitsig.AllowedSigners(signers...)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(cmd.OutOrStdout(), out)
	return err
}

// readClusterInfos are the clusters src publishes (clusters/<id>/
// cluster.yaml), by ID; one whose cluster.yaml cannot be read is skipped,
// saying so on cmd's stderr.
func readClusterInfos(cmd *cobra.Command, src *repoSource) ([]*layout.ClusterInfo, error) {
	entries, err := fs.ReadDir(src.Tree, layout.ClustersDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (give a checkout of the peering repo, which has a clusters/ directory)", src.Where(), err)
	}
	var infos []*layout.ClusterInfo
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		ci, err := layout.ReadClusterInfo(src.Tree, e.Name())
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "skipping %s: %v\n", e.Name(), err)
			continue
		}
		infos = append(infos, ci)
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].ClusterID < infos[j].ClusterID })
	return infos, nil
}

// printOpenPGPKeys prints the published OpenPGP key of each cluster of
// infos that has one, after checking every one against its cluster.yaml;
// one that does not check fails the command before anything is printed.
func printOpenPGPKeys(cmd *cobra.Command, tree fs.FS, infos []*layout.ClusterInfo) error {
	var keyring []byte
	var listing strings.Builder
	for _, ci := range infos {
		file := layout.ClusterPath(ci.ClusterID, layout.OpenPGPKeyFile)
		data, err := fs.ReadFile(tree, file)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(&listing, "%s: no %s (it signs with SSH)\n", ci.ClusterID, file)
			continue
		}
		if err != nil {
			return err
		}
		pub, err := ci.Key()
		if err != nil {
			return err
		}
		fp, keyID, err := commitsig.CheckOpenPGPKey(data, pub, commitsig.OpenPGPUserID(ci.ClusterID))
		if err != nil {
			return fmt.Errorf("%s: %w (a repo writer cannot substitute a cluster's key; the cluster's next pass replaces or removes it)", file, err)
		}
		keyring = append(keyring, data...)
		fmt.Fprintf(&listing, "%s: key ID %s, fingerprint %s\n", ci.ClusterID, keyID, fp)
	}
	fmt.Fprint(cmd.ErrOrStderr(), listing.String())
	_, err := cmd.OutOrStdout().Write(keyring)
	return err
}
