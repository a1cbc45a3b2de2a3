package daemon

import (
	"context"
	"fmt"
	"os"

	fluxevents "github.com/fluxcd/pkg/runtime/events"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Component is the source of gitpeer's Events (the "From" column of
// kubectl describe) and the field manager of what the daemon writes.
const Component = "gitpeer"

// KubeEvents publishes events as Kubernetes Events about the cluster's
// Lease gitpeer-<cluster> (LeaseName) in the Liqo namespace, so that
//
//	kubectl describe lease gitpeer-<cluster> -n liqo
//
// shows, in one place, which replica runs the passes (Holder Identity) and
// what they reported: each peering's changes of condition (IdentityIssued,
// KeyChanged, SignatureVerificationFailed, InvalidCSR, …), failed passes
// (PushRejected, ReconciliationFailed) and leader changes
// (LeaderElection). The Lease is created (without a holder) when missing,
// so Events have an object to be about with or without leader election.
//
// Why not Liqo's Tenant or Identity of each peering: those live in a
// liqo-tenant-<peer> namespace per peer, created as peerings appear; posting
// there needs events create in every namespace, a cluster-wide grant, and
// they do not exist before the handshake reaches them, which is when a
// refusal is most worth reading. The Lease needs only the Role gitpeer
// already has in the Liqo namespace.
type KubeEvents struct {
	Leases          coordinationv1client.LeasesGetter
	Namespace, Name string
	// Recorder posts the Events, e.g. NewEventRecorder's.
	Recorder record.EventRecorder
	Log      logr.Logger
}

// Publish implements EventSink. Failures are logged: the broadcaster posts
// asynchronously, with client-go's retries, aggregation and rate limits.
func (k *KubeEvents) Publish(ctx context.Context, events []Event) {
	if len(events) == 0 {
		return
	}
	lease, err := k.lease(ctx)
	if err != nil {
		k.Log.Error(err, "events not posted", "lease", k.Namespace+"/"+k.Name)
		return
	}
	for _, e := range events {
		k.Recorder.AnnotatedEventf(lease, e.Annotations, e.Type, e.Reason, "%s", e.Message)
	}
}

// lease returns the Lease the events are about, created if missing: its
// UID is what kubectl describe matches events by.
func (k *KubeEvents) lease(ctx context.Context) (*coordinationv1.Lease, error) {
	leases := k.Leases.Leases(k.Namespace)
	l, err := leases.Get(ctx, k.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: k.Name, Namespace: k.Namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "gitpeer", "app.kubernetes.io/managed-by": Component},
		}}, metav1.CreateOptions{FieldManager: Component})
		if apierrors.IsAlreadyExists(err) { // a replica's leader election was first
			l, err = leases.Get(ctx, k.Name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s/%s: %w", k.Namespace, k.Name, err)
	}
	l.TypeMeta = metav1.TypeMeta{APIVersion: coordinationv1.SchemeGroupVersion.String(), Kind: "Lease"}
	return l, nil
}

// NewEventRecorder returns an event recorder posting through events (the
// core/v1 Events API, as Flux controllers do: create, and patch to count
// repeats) with Component as source, wrapped in fluxcd/pkg/runtime/events'
// Recorder (which also logs each event at trace level), and a function that
// stops it.
func NewEventRecorder(events corev1client.EventsGetter, log logr.Logger) (record.EventRecorder, func(), error) {
	scheme := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if log.GetSink() == nil { // logr.Discard(): flux's Recorder needs a sink
		log = funcr.New(func(string, string) {}, funcr.Options{})
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: events.Events("")})
	host, _ := os.Hostname()
	kube := b.NewRecorder(scheme, corev1.EventSource{Component: Component, Host: host})
	rec, err := fluxevents.NewRecorderForScheme(scheme, kube, log, "", Component)
	if err != nil {
		b.Shutdown()
		return nil, nil, err
	}
	return rec, b.Shutdown, nil
}
