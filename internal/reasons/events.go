package reasons

import "github.com/fluxcd/pkg/apis/meta"

// Event reasons: the reasons of the Kubernetes Events the daemon posts on
// its Lease (and of its log lines and /status). docs/trust.md and
// docs/deploy.md have a line for each.
const (
	// AppliedBranchRestored: the cluster's applied branch was found
	// at another commit than the newest seal its reconciler recorded
	// (someone else pushed it, an older seal say), and the pass pointed it
	// back before doing anything else (gitsync.Result.AppliedRestored).
	// Find who pushed it; let only the cluster's deploy key push it.
	AppliedBranchRestored = "AppliedBranchRestored"
	// DuplicateReconciler: a second reconciler of this cluster is
	// writing (runner.ErrDuplicateReconciler): this one stopped writing;
	// stop all but one and restart it.
	DuplicateReconciler = "DuplicateReconciler"
	// PushRejected: the remote branch moved on every push attempt of
	// a pass (gitsync.ErrPushConflict).
	PushRejected = "PushRejected"
	// ReconciliationFailed: a pass failed for another reason (the spec, the
	// cluster's own state, Git); the message is the error.
	ReconciliationFailed = meta.ReconciliationFailedReason
	// ReconciliationSucceeded: the first good pass after failed ones.
	ReconciliationSucceeded = meta.ReconciliationSucceededReason
	// RevocationStuck: what a revocation pruned is still being
	// deleted minutes later (backend.StuckReporter), typically a tenant
	// namespace held by Liqo's finalizers while Liqo's controller-manager
	// is down; the message says what holds it and what to do.
	RevocationStuck = "RevocationStuck"
)
