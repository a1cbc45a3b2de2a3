package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/backend/file"
	"github.com/gitpeer/gitpeer/internal/backend/kubernetes"
)

// Backend kinds of --backend.
const (
	backendFile       = "file"
	backendKubernetes = "kubernetes"
)

// backendFlags select and configure where a cluster's private material lives.
type backendFlags struct {
	fs   *pflag.FlagSet
	kind string
	// file backend
	stateDir string
	caCert   string
	caKey    string
	// kubernetes backend
	kubeconfig    string
	context       string
	liqoNamespace string
	caFile        string
}

// clusterFlags are a required --cluster and its backend's flags: the
// cluster a command acts on and where its private material lives, for the
// commands that change that material alone (token, rotate-key).
type clusterFlags struct {
	cluster string
	backend backendFlags
}

func (f *clusterFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.cluster, "cluster", "", "this cluster's ID")
	f.backend.register(cmd.Flags(), false)
	_ = cmd.MarkFlagRequired("cluster")
}

// Flags of each backend, to refuse those of the other one.
var (
	fileOnlyFlags       = []string{"state-dir", "ca-cert", "ca-key"}
	kubernetesOnlyFlags = []string{"kubeconfig", "context", "liqo-namespace", "ca-file"}
)

func (f *backendFlags) register(fs *pflag.FlagSet, forInit bool) {
	f.fs = fs
	fs.StringVar(&f.kind, "backend", backendFile, "where the cluster's private material lives: file or kubernetes")
	fs.StringVar(&f.stateDir, "state-dir", "", "file backend: directory for the cluster's private material (0700)")
	if forInit {
		fs.StringVar(&f.caCert, "ca-cert", "", "file backend: import this CA certificate (PEM) instead of creating one, e.g. kubeadm's pki/ca.crt")
		fs.StringVar(&f.caKey, "ca-key", "", "file backend: the imported CA's private key (PEM), e.g. kubeadm's pki/ca.key")
	}
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubernetes backend: kubeconfig file (default $KUBECONFIG, ~/.kube/config, or the in-cluster config in a Pod)")
	fs.StringVar(&f.context, "context", "", "kubernetes backend: kubeconfig context (default the current context)")
	fs.StringVar(&f.liqoNamespace, "liqo-namespace", kubernetes.DefaultLiqoNamespace, "kubernetes backend: namespace of Liqo's keys and cluster ID")
	fs.StringVar(&f.caFile, "ca-file", "", "kubernetes backend: CA bundle (PEM) consumers trust, instead of the kubeconfig's; must hold the kube-apiserver-client signer's CA (give the same file to init and reconcile)")
}

// check refuses an unknown backend, flags of the other backend, and a file
// backend without its state dir.
func (f *backendFlags) check() error {
	var foreign []string
	switch f.kind {
	case backendFile:
		if f.stateDir == "" {
			return fmt.Errorf("--state-dir is required with --backend file")
		}
		foreign = kubernetesOnlyFlags
	case backendKubernetes:
		foreign = fileOnlyFlags
	default:
		return fmt.Errorf("--backend: %q is not one of: file, kubernetes", f.kind)
	}
	for _, name := range foreign {
		if f.fs != nil && f.fs.Changed(name) {
			return fmt.Errorf("--%s does not apply to --backend %s", name, f.kind)
		}
	}
	return nil
}

// initialize creates (or reopens) the backend of cluster; created reports
// whether anything new was made.
func (f *backendFlags) initialize(ctx context.Context, cluster, apiServer string) (backend.Backend, bool, error) {
	if err := f.check(); err != nil {
		return nil, false, err
	}
	if f.kind == backendKubernetes {
		opts, err := f.kubernetesOptions(cluster)
		if err != nil {
			return nil, false, err
		}
		opts.APIServer = apiServer
		return kubernetes.Init(ctx, opts)
	}
	opts := file.InitOptions{ClusterID: cluster, APIServer: apiServer}
	if f.caCert != "" || f.caKey != "" {
		var err error
		if opts.CACertPEM, err = os.ReadFile(f.caCert); err != nil {
			return nil, false, fmt.Errorf("--ca-cert: %w", err)
		}
		if opts.CAKeyPEM, err = os.ReadFile(f.caKey); err != nil {
			return nil, false, fmt.Errorf("--ca-key: %w", err)
		}
	}
	return file.Init(f.stateDir, opts)
}

// open opens the backend of an initialized cluster and checks it is cluster's.
func (f *backendFlags) open(ctx context.Context, cluster string) (backend.Backend, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.kind == backendKubernetes {
		opts, err := f.kubernetesOptions(cluster)
		if err != nil {
			return nil, err
		}
		return kubernetes.New(ctx, opts)
	}
	b, err := file.Open(f.stateDir)
	if err != nil {
		return nil, err
	}
	if b.ClusterID() != cluster {
		return nil, fmt.Errorf("--cluster is %q but state dir %s holds cluster %q", cluster, f.stateDir, b.ClusterID())
	}
	return b, nil
}

// kubernetesOptions are the kubernetes backend's options from the flags.
// The backend checks cluster against Liqo's cluster ID ConfigMap.
func (f *backendFlags) kubernetesOptions(cluster string) (kubernetes.Options, error) {
	cfg, err := f.restConfig()
	if err != nil {
		return kubernetes.Options{}, err
	}
	opts := kubernetes.Options{Config: cfg, LiqoNamespace: f.liqoNamespace, ClusterID: cluster}
	if f.caFile != "" {
		if opts.CABundle, err = os.ReadFile(f.caFile); err != nil {
			return kubernetes.Options{}, fmt.Errorf("--ca-file: %w", err)
		}
	}
	return opts, nil
}

// restConfig loads the client configuration as kubectl does: --kubeconfig,
// else $KUBECONFIG, else ~/.kube/config, with --context; in a Pod with none
// of those, the in-cluster config.
func (f *backendFlags) restConfig() (*rest.Config, error) {
	if f.kubeconfig != "" {
		if _, err := os.Stat(f.kubeconfig); err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("--backend kubernetes: no kubeconfig found: give --kubeconfig, set $KUBECONFIG, or run in a Pod")
		}
		return nil, fmt.Errorf("--backend kubernetes: %s", strings.TrimPrefix(err.Error(), "invalid configuration: "))
	}
	cfg.UserAgent = "gitpeer"
	return cfg, nil
}

// defaultCheckout is where the reconciler keeps its clone.
func (f *backendFlags) defaultCheckout(cluster string) string {
	if f.kind == backendFile && f.stateDir != "" {
		return f.stateDir + "/checkout"
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return dir + "/gitpeer/" + cluster
	}
	return os.TempDir() + "/gitpeer-" + cluster
}
