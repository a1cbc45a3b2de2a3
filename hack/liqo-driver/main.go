// Command gitpeer-liqo-driver installs, on one cluster, what Liqo's Helm chart
// would install besides its Pods, so that Liqo's own binaries
// (liqo-controller-manager, crd-replicator, webhook, virtual-kubelet) can run
// beside the cluster as local processes with the admin kubeconfig: gitpeer's
// Liqo e2e test (test/e2e/liqo_test.go) runs them so.
//
// It is built inside a copy of Liqo's module by hack/build-liqo.sh (it uses
// Liqo's chart and Helm's template engine at the versions Liqo's go.mod pins);
// its own go.mod only keeps it out of gitpeer's module.
//
// What it does, for --kubeconfig's cluster:
//
//   - renders Liqo's chart (--chart, deployments/liqo of the Liqo module) with
//     Helm's engine, with the values --set gives on top of: the cluster ID
//     (discovery.config.clusterID), the image tag (so the chart renders), the
//     networking module off (networking.enabled=false) and the webhook port;
//   - applies, server-side, the rendered objects of the kinds in installKinds:
//     the ClusterRoles the tenant controller looks up by app.kubernetes.io/name
//     (remote-controlplane, virtual-kubelet-remote, …), the other RBAC objects
//     and ServiceAccounts, the cluster-ID ConfigMap liqo-clusterid-configmap
//     with its label, the VkOptionsTemplate virtual-kubelet-default, the
//     RuntimeClass liqo, and the Mutating/ValidatingWebhookConfigurations,
//     whose service clientConfig is rewritten to url
//     https://127.0.0.1:<port><path> with the caBundle of a self-signed CA;
//   - writes that CA's serving certificate for 127.0.0.1 as tls.crt/tls.key in
//     --cert-dir, where the webhook process (Liqo's cmd/webhook, run with
//     TMPDIR so that controller-runtime reads its certificates there) serves;
//   - writes to --out (JSON) the args of the chart's Deployments (container
//     args, with $(CLUSTER_ID) and $(POD_NAMESPACE) substituted), so that the
//     test runs each binary with the args the chart gives it.
//
// Left out on purpose: the Deployments, DaemonSets, Services, Jobs and the
// webhook certificate Secret (the processes run outside the cluster), the
// networking module's objects (IPAM networks, gateway templates, firewall
// configurations: networking stays off), metrics (ServiceMonitors,
// PodMonitors, the metric agent's APIService, which would point the
// aggregator at a Service with no endpoints), telemetry, the StorageClass
// of Liqo's virtual storage (no volumes are offloaded here) and OpenShift's
// SecurityContextConstraints. The ServiceAccounts and their bindings are
// installed as the chart makes them, but the processes run with the admin
// kubeconfig, except the virtual-kubelet, which the test runs with its
// ServiceAccount's token (Liqo approves its serving CSR by that identity).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/strvals"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// fieldManager is the field manager of everything the driver applies.
const fieldManager = "gitpeer-liqo-driver"

// installKinds are the kinds of the rendered chart the driver applies.
var installKinds = map[string]bool{
	"ServiceAccount":                 true,
	"ClusterRole":                    true,
	"ClusterRoleBinding":             true,
	"Role":                           true,
	"RoleBinding":                    true,
	"ConfigMap":                      true,
	"VkOptionsTemplate":              true,
	"RuntimeClass":                   true,
	"MutatingWebhookConfiguration":   true,
	"ValidatingWebhookConfiguration": true,
}

func main() {
	var (
		kubeconfig  = flag.String("kubeconfig", "", "the cluster's admin kubeconfig")
		namespace   = flag.String("namespace", "liqo", "Liqo's namespace (the release namespace)")
		clusterID   = flag.String("cluster-id", "", "the cluster's Liqo cluster ID")
		chartDir    = flag.String("chart", "", "Liqo's chart (deployments/liqo of the Liqo module)")
		tag         = flag.String("tag", "v1.2.0", "the chart's tag value (image version)")
		webhookPort = flag.Int("webhook-port", 9443, "the loopback port Liqo's webhook process serves on")
		certDir     = flag.String("cert-dir", "", "where to write the webhook's tls.crt and tls.key")
		out         = flag.String("out", "", "where to write the Deployments' args (JSON)")
		timeout     = flag.Duration("timeout", 2*time.Minute, "bound of the whole run")
	)
	var sets []string
	flag.Func("set", "a Helm value (key=value), repeatable", func(v string) error { sets = append(sets, v); return nil })
	flag.Parse()
	if *kubeconfig == "" || *clusterID == "" || *chartDir == "" || *certDir == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "gitpeer-liqo-driver: --kubeconfig, --cluster-id, --chart, --cert-dir and --out are required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	values := append([]string{
		"tag=" + *tag,
		"discovery.config.clusterID=" + *clusterID,
		"networking.enabled=false",
		fmt.Sprintf("webhook.port=%d", *webhookPort),
	}, sets...)
	if err := run(ctx, *kubeconfig, *namespace, *clusterID, *chartDir, values, *webhookPort, *certDir, *out); err != nil {
		fmt.Fprintf(os.Stderr, "gitpeer-liqo-driver: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, ns, clusterID, chartDir string, sets []string, port int, certDir, out string) error {
	objs, err := render(chartDir, ns, sets)
	if err != nil {
		return err
	}
	caPEM, err := writeServingCert(certDir)
	if err != nil {
		return err
	}
	args := map[string][]string{}
	var apply []*unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment":
			a, err := deploymentArgs(o, map[string]string{"CLUSTER_ID": clusterID, "POD_NAMESPACE": ns})
			if err != nil {
				return err
			}
			args[strings.TrimPrefix(o.GetName(), "liqo-")] = a
		case !installKinds[o.GetKind()]:
		case strings.HasPrefix(o.GetAPIVersion(), "networking.liqo.io/"), strings.HasPrefix(o.GetAPIVersion(), "ipam.liqo.io/"):
		default:
			if strings.HasSuffix(o.GetKind(), "WebhookConfiguration") {
				if err := toURL(o, port, caPEM); err != nil {
					return err
				}
			}
			apply = append(apply, o)
		}
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	// Webhook configurations last: once registered, Liqo's objects need the
	// webhook process to be admitted.
	sort.SliceStable(apply, func(i, j int) bool {
		return !strings.HasSuffix(apply[i].GetKind(), "WebhookConfiguration") && strings.HasSuffix(apply[j].GetKind(), "WebhookConfiguration")
	})
	for _, o := range apply {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w (are Liqo's CRDs installed?)", gvk.Kind, o.GetName(), err)
		}
		ri := dyn.Resource(m.Resource)
		var r dynamic.ResourceInterface = ri
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			o.SetNamespace(ns)
			r = ri.Namespace(ns)
		}
		if o.GetKind() == "ConfigMap" && o.GetName() == "liqo-clusterid-configmap" {
			// The chart keeps an existing cluster ID (its lookup); so does
			// the driver: a different one is an error.
			cur, err := r.Get(ctx, o.GetName(), metav1.GetOptions{})
			if err == nil {
				if id, _, _ := unstructured.NestedString(cur.Object, "data", "CLUSTER_ID"); id != clusterID {
					return fmt.Errorf("configmap %s/%s says CLUSTER_ID %q, not %q", ns, o.GetName(), id, clusterID)
				}
			}
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			return err
		}
		force := true
		if _, err := r.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
			return fmt.Errorf("apply %s %s: %w", gvk.Kind, o.GetName(), err)
		}
		fmt.Printf("applied %s %s\n", gvk.Kind, o.GetName())
	}

	data, err := json.MarshalIndent(args, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(data, '\n'), 0o644)
}

// render renders the chart in chartDir as release "liqo" in ns, with the
// values of sets (Helm's --set syntax), and returns its objects.
func render(chartDir, ns string, sets []string) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", chartDir, err)
	}
	vals := map[string]any{}
	for _, s := range sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			return nil, fmt.Errorf("value %q: %w", s, err)
		}
	}
	if err := chartutil.ProcessDependenciesWithMerge(chrt, vals); err != nil {
		return nil, err
	}
	rv, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{Name: "liqo", Namespace: ns, IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(chrt, rv)
	if err != nil {
		return nil, fmt.Errorf("render chart: %w", err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, "NOTES.txt") {
			continue
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader([]byte(files[n]))))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			o := &unstructured.Unstructured{}
			if err := utilyaml.Unmarshal(doc, &o.Object); err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			if len(o.Object) == 0 || o.GetKind() == "" {
				continue
			}
			objs = append(objs, o)
		}
	}
	return objs, nil
}

// deploymentArgs returns the args of a Deployment's first container, with
// the $(VAR) references of env substituted.
func deploymentArgs(d *unstructured.Unstructured, env map[string]string) ([]string, error) {
	cs, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if err != nil || len(cs) == 0 {
		return nil, fmt.Errorf("deployment %s: no containers (%v)", d.GetName(), err)
	}
	c, _ := cs[0].(map[string]any)
	raw, _, _ := unstructured.NestedStringSlice(c, "args")
	out := make([]string, 0, len(raw))
	for _, a := range raw {
		for k, v := range env {
			a = strings.ReplaceAll(a, "$("+k+")", v)
		}
		out = append(out, a)
	}
	return out, nil
}

// toURL points every webhook of a webhook configuration at the loopback
// port, same path, with caPEM as its caBundle.
func toURL(o *unstructured.Unstructured, port int, caPEM []byte) error {
	whs, _, err := unstructured.NestedSlice(o.Object, "webhooks")
	if err != nil {
		return err
	}
	for i, w := range whs {
		wm, _ := w.(map[string]any)
		path, _, _ := unstructured.NestedString(wm, "clientConfig", "service", "path")
		if path == "" {
			return fmt.Errorf("%s %s: webhook %d has no service path", o.GetKind(), o.GetName(), i)
		}
		wm["clientConfig"] = map[string]any{
			"url":      fmt.Sprintf("https://127.0.0.1:%d%s", port, path),
			"caBundle": base64.StdEncoding.EncodeToString(caPEM),
		}
		whs[i] = wm
	}
	return unstructured.SetNestedSlice(o.Object, whs, "webhooks")
}

// writeServingCert makes a self-signed CA and a serving certificate for
// 127.0.0.1 and localhost signed by it (ECDSA P-256, one year), writes the
// certificate and key as tls.crt and tls.key in dir, as controller-runtime's
// webhook server reads them, and returns the CA certificate (PEM).
func writeServingCert(dir string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gitpeer-liqo-driver webhook CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}
