// Package attack holds gitpeer's attack suite (docs/design.md, invariant 6): every
// promise of the trust model (docs/trust.md) tried the way a writer of the
// peering repo would try to break it, against real repos.
//
// Each test sets up a bare Git repository, clusters with file backends and
// their reconcilers (runner.Signed: signed commits and the applied branch
// gitpeer/applied/<id>), lets the peerings settle, and then acts as an
// attacker with the real git CLI in a clone of its own: it edits, adds and
// deletes files, forges authors and Gitpeer-Cluster trailers, makes merge
// commits, restores old files from history, signs with keys of its own, and
// pushes. It then runs the reconcilers' next passes and checks that
//
//   - the attack is refused with a named reason in the victim's status.yaml;
//   - nothing is signed for it (a counting wrapper around each backend's
//     SignCSR);
//   - what was accepted before is kept (Identities, kubeconfigs, answers);
//   - where it is about what gets applied, the victim's applied branch never
//     points at a tree holding it, and its head is always a commit signed by
//     the victim's key (checked after every pass of every cluster);
//   - a reviewer's gitpeer verify (verify.Check with History) names it, with
//     its reason and the commit that brought it.
//
// A test that found a hole the suite could not have fixed where it lives is
// skipped with "KNOWN: …" and the reason, after every check that holds.
//
// One file per family: keys, ownership, planted, tamper, replay, corrupt,
// bomb, entries, hostile, secrets, duplicate, uncheckoutable (paths no
// checkout can hold), status. The tests named TestRealCluster… also try
// what a settled world applies on a real kube-apiserver
// (GITPEER_TEST_KUBECONFIG; skipped without one): make e2e runs them in
// hack/backend-real.sh. The package has no code of its own: it is tests
// only, run with `go test ./attack/`.
package attack
