package main

import (
	"crypto"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"

	"github.com/gitpeer/gitpeer/internal/git/commitsig"
	"github.com/gitpeer/gitpeer/internal/git/gitauth"
	"github.com/gitpeer/gitpeer/internal/git/gitobj"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// initOptions are init's flags: the cluster and its backend, and where
// and how to publish it.
type initOptions struct {
	cluster, apiServer, repo, repoURL, gitSecret string
	signingFormat                                string
	backend                                      backendFlags
}

func newInitCmd() *cobra.Command {
	o := &initOptions{}
	cmd := &cobra.Command{
		Use:   "init --cluster ID --api-server URL (--state-dir DIR | --backend kubernetes) [--repo PATH]",
		Short: "Create a cluster's private state and publish its public identity",
		Long: `init creates the cluster's private material where its backend keeps it, and
running it again for the same cluster reuses it: keys are never rotated
silently.

  --backend file (default): an Ed25519 key, a CA for signing client
  certificates (or one imported with --ca-cert/--ca-key) and the secret nonces
  derive from, in --state-dir (mode 0700, files 0600).
  --backend kubernetes: the key in Secret authentication-keys of the Liqo
  namespace, in Liqo's format (a cluster running Liqo keeps one identity);
  certificates are later signed through the certificates.k8s.io API. The
  cluster ID comes from Liqo's liqo-clusterid-configmap when Liqo is
  installed, else from --cluster; the CA bundle from the kubeconfig (or
  --ca-file).

With --repo, it writes clusters/<id>/cluster.yaml (public facts only: cluster
ID, public key and its fingerprint, API server, CA bundle), an empty
kustomization.yaml and the manifest.yaml that signs them with the cluster key
into that working tree, for you to commit and propose.
Without it, it prints cluster.yaml.

It also prints the cluster's commit-signing key (an authorized_keys line: the
reconciler signs its commits with the cluster key) and the Flux GitRepository,
with the Secret of its verify key, that makes the cluster's Flux apply only
what its own reconciler signed: it tracks branch gitpeer/applied/<id>, which
only that reconciler writes. With --repo they go to stdout, else to stderr.

--signing-format openpgp is for a cluster whose reconciler will sign with
OpenPGP (reconcile --signing-format openpgp), as Argo CD requires: init then
prints the key ID and fingerprint of the OpenPGP key derived from the cluster
key (Argo CD's AppProject names it by that key ID), writes the armored key as
clusters/<id>/openpgp.asc with --repo, and the printed Flux Secret trusts it
under <id>.asc instead of the SSH key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.cluster, "cluster", "", "cluster ID (DNS-1123 label, at most 51 characters)")
	f.StringVar(&o.apiServer, "api-server", "", "https URL consumers reach this cluster's API server at (kubernetes backend: default the kubeconfig's server)")
	f.StringVar(&o.repo, "repo", "", "working tree of the peering repo to write clusters/<id>/ into")
	f.StringVar(&o.repoURL, "repo-url", "", "URL Flux reads the peering repo at, for the printed GitRepository (default: --repo's origin; an scp-like user@host:path is printed as ssh://user@host/path, as Flux takes no scp-like address)")
	f.StringVar(&o.signingFormat, "signing-format", string(commitsig.FormatSSH), "the format the reconciler will sign commits in, as git's gpg.format: ssh (Flux) or openpgp (Argo CD; Flux too): which key to print and publish")
	f.StringVar(&o.gitSecret, "git-secret", "", "Secret (in flux-system) of the Git credentials, for the printed GitRepository's spec.secretRef: the Secret reconcile mounts as --git-credentials")
	o.backend.register(f, true)
	return cmd
}

// run is init's body: it checks the flags, creates or reopens the
// cluster's backend, prints its keys and Flux source, and writes or prints
// its cluster.yaml.
func (o *initOptions) run(cmd *cobra.Command) error {
	format, err := o.check()
	if err != nil {
		return err
	}
	b, created, err := o.backend.initialize(cmd.Context(), o.cluster, o.apiServer)
	if err != nil {
		return err
	}
	cluster := b.ClusterID()
	info, err := b.ClusterInfo()
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	if created {
		fmt.Fprintf(stderr, "created state for %s (%s backend)\n", cluster, o.backend.kind)
	} else {
		fmt.Fprintf(stderr, "reusing state for %s (%s backend)\n", cluster, o.backend.kind)
	}
	if ns, ok := b.(interface{ CreatedNamespace() string }); ok && ns.CreatedNamespace() != "" {
		fmt.Fprintf(stderr, "created namespace %s for Liqo's authentication-keys Secret: Liqo is not installed there; install Liqo into that namespace (it keeps the key gitpeer created), or delete the namespace and pass --liqo-namespace if Liqo lives elsewhere\n", ns.CreatedNamespace())
	}
	if !created && o.apiServer != "" && info.APIServer != o.apiServer {
		fmt.Fprintf(stderr, "warning: the state for %s keeps its API server %s; --api-server %s is ignored (init never changes a cluster's identity). To change it, run gitpeer rotate-key --api-server %s, which signs the change with the cluster key\n",
			cluster, info.APIServer, o.apiServer, o.apiServer)
	}
	fmt.Fprintf(stderr, "public key fingerprint: %s\n", info.Fingerprint)
	sshFP, err := sshFingerprint(b.Signer().Public())
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s %s\n", sshFingerprintLabel, sshFP)
	flux, verifyKey, err := fluxSource(cluster, b.Signer(), format, o.fluxURL(stderr), o.gitSecret)
	if err != nil {
		return err
	}
	pgpKey, err := printSigningKey(stderr, cluster, b.Signer(), format, verifyKey)
	if err != nil {
		return err
	}
	if o.repo == "" {
		data, err := info.Encode()
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Flux source for %s (apply on %s; it applies only commits its reconciler signed):\n%s", cluster, cluster, flux)
		_, err = cmd.OutOrStdout().Write(data)
		return err
	}
	defer func() {
		fmt.Fprintf(cmd.ErrOrStderr(), "Flux source for %s, on stdout (apply on %s; it applies only commits its reconciler signed):\n", cluster, cluster)
		_, _ = cmd.OutOrStdout().Write(flux)
	}()
	warnReplacedKey(cmd, o.repo, info)
	files, err := layout.PublishFiles(layout.NewTree(o.repo), info)
	if err != nil {
		return err
	}
	if pgpKey != nil {
		files[layout.ClusterPath(cluster, layout.OpenPGPKeyFile)] = pgpKey
	}
	return publish(o.repo, b.Signer(), cluster, files, time.Now(), stderr)
}

// check refuses, before any backend is touched, flags that are missing or
// malformed, and returns the signing format.
func (o *initOptions) check() (commitsig.Format, error) {
	if o.cluster == "" && o.backend.kind != "kubernetes" {
		return "", fmt.Errorf("--cluster is required with --backend %s", o.backend.kind)
	}
	if o.cluster != "" {
		if err := layout.CheckClusterID(o.cluster); err != nil {
			return "", fmt.Errorf("--cluster: %w", err)
		}
	}
	if o.apiServer == "" && o.backend.kind != "kubernetes" {
		return "", fmt.Errorf("--api-server is required with --backend %s", o.backend.kind)
	}
	if o.apiServer != "" {
		if err := layout.CheckAPIServer(o.apiServer); err != nil {
			return "", fmt.Errorf("--api-server: %w", err)
		}
	}
	if o.repoURL != "" {
		if err := gitauth.CheckURL(o.repoURL); err != nil {
			return "", fmt.Errorf("--repo-url: %w", err)
		}
	}
	format, err := commitsig.ParseFormat(o.signingFormat)
	if err != nil {
		return "", fmt.Errorf("--signing-format: %w", err)
	}
	if o.repo != "" {
		if err := checkWorkTree(o.repo); err != nil {
			return "", err
		}
	}
	return format, nil
}

// fluxURL is the URL the printed GitRepository reads the repo at:
// --repo-url, else --repo's origin, else an example (said on stderr), as
// Flux takes it (an scp-like address converted, said on stderr).
func (o *initOptions) fluxURL(stderr io.Writer) string {
	repoURL := o.repoURL
	if repoURL == "" && o.repo != "" {
		repoURL = originURL(o.repo)
	}
	if repoURL == "" {
		repoURL = "ssh://git@git.example.com/platform/peering.git"
		fmt.Fprintln(stderr, "no --repo-url and no origin remote: the printed GitRepository shows an example URL")
	}
	if u, converted := fluxURL(repoURL); converted {
		fmt.Fprintf(stderr, "note: %s is an scp-like address, which Flux refuses: the printed GitRepository uses %s (the same repository on GitHub, GitLab and Gitea; on a plain SSH server, where the scp path is relative to the home directory, pass --repo-url ssh://HOST/ABSOLUTE/PATH)\n", repoURL, u)
		repoURL = u
	}
	return repoURL
}

// printSigningKey prints on stderr the commit-signing key of cluster, key
// in format (verifyKey as Flux's Secret holds it), and for OpenPGP its key
// ID and fingerprint; it returns the armored OpenPGP key to publish, nil
// for SSH.
func printSigningKey(stderr io.Writer, cluster string, key crypto.Signer, format commitsig.Format, verifyKey string) ([]byte, error) {
	// The key is printed as a line of its own: "wrote …" follows it.
	if !strings.HasSuffix(verifyKey, "\n") {
		verifyKey += "\n"
	}
	if format != commitsig.FormatOpenPGP {
		fmt.Fprintf(stderr, "commit-signing key (Flux GitRepository.spec.verify, Secret key %s.sshpub):\n%s", cluster, verifyKey)
		return nil, nil
	}
	fp, keyID, err := commitsig.OpenPGPFingerprint(key.Public())
	if err != nil {
		return nil, err
	}
	pgpKey, err := commitsig.OpenPGPPublicKey(key, commitsig.OpenPGPUserID(cluster))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "OpenPGP commit-signing key: key ID %s (Argo CD: SIGNING_KEY_ID=%s), fingerprint %s\n", keyID, keyID, fp)
	fmt.Fprintf(stderr, "commit-signing key (Flux GitRepository.spec.verify, Secret key %s.asc; argocd gpg add):\n%s", cluster, verifyKey)
	return pgpKey, nil
}

// sshFingerprintLabel starts init's line with the cluster key's SSH
// fingerprint: the docs tell an admin to compare it with what
// ssh-keygen -lf prints for the commit-signing key.
const sshFingerprintLabel = "commit-signing key fingerprint (as ssh-keygen -lf prints it):"

// sshFingerprint is pub's fingerprint as OpenSSH prints it ("SHA256:"
// and the unpadded base64 of the SHA-256 of its wire form), which is not
// gitpeer's "sha256:<hex>" of the PKIX DER that cluster.yaml and the spec
// carry.
func sshFingerprint(pub crypto.PublicKey) (string, error) {
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", err
	}
	return ssh.FingerprintSHA256(k), nil
}

// checkWorkTree refuses an init --repo that is not the root of a Git
// working tree: init writes clusters/<id>/ there for a commit, and a bare
// repository, a URL or a plain directory would take the files nowhere
// anyone commits from.
func checkWorkTree(repo string) error {
	if strings.Contains(repo, "://") || scpLike(repo) {
		return fmt.Errorf("--repo %s is a URL: init writes files into a working tree for you to commit; clone the peering repo (git clone %s peering) and pass --repo peering", repo, repo)
	}
	st, err := os.Stat(repo)
	if err != nil {
		return fmt.Errorf("--repo: %w: clone the peering repo (git clone URL DIR) and pass --repo DIR", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--repo %s is not a directory: pass the root of a clone of the peering repo", repo)
	}
	if isCheckout(repo) {
		return nil
	}
	if bare, _ := gitobj.IsRepository(repo); bare {
		return fmt.Errorf("--repo %s is a bare repository (no working tree): init writes clusters/<id>/ into a working tree for you to commit; clone it (git clone %s peering) and pass --repo peering", repo, repo)
	}
	return fmt.Errorf("--repo %s is not the root of a Git working tree (no .git there): init writes clusters/<id>/ into a clone of the peering repo for you to commit and propose; pass the clone's root, or git init it first", repo)
}

// scpLike reports whether s is an scp-like Git address (user@host:path):
// a colon before any slash, and not a Windows drive letter.
func scpLike(s string) bool {
	colon := strings.Index(s, ":")
	slash := strings.Index(s, "/")
	return colon > 1 && (slash < 0 || colon < slash)
}

// warnReplacedKey says, on cmd's stderr, when clusters/<id>/cluster.yaml in
// the working tree repo publishes a key other than info's: the write gives
// the cluster a new identity that every peer refuses (KeyChanged) until its
// admin re-pins it, and from the wrong backend (a kube context, a state
// dir) it publishes another cluster's key under this ID.
func warnReplacedKey(cmd *cobra.Command, repo string, info *layout.ClusterInfo) {
	old, err := layout.ReadClusterInfo(layout.NewTree(repo), info.ClusterID)
	if err != nil || old.Fingerprint == info.Fingerprint {
		return
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s published key %s; this writes %s, a new identity for %s: every peer refuses it (KeyChanged) until its admin re-pins it with gitpeer trust. "+
		"If this backend is not %s's (check --context/--kubeconfig or --state-dir), do not commit it: git -C %s checkout -- %s. "+
		"To change %s's key keeping its peerings, use gitpeer rotate-key instead\n",
		layout.ClusterPath(info.ClusterID, layout.ClusterFile), old.Fingerprint, info.Fingerprint, info.ClusterID, info.ClusterID,
		repo, layout.ClusterPath(info.ClusterID), info.ClusterID)
}
