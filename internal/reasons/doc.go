// Package reasons is the one registry of the reasons gitpeer reports, one
// file per kind: the conditions of a cluster's status.yaml (conditions.go),
// the findings of `gitpeer verify` (findings.go) and the daemon's Events
// (events.go), each with its doc line, in the way source-controller keeps
// its condition reasons in one file. A reason is a CamelCase word, stable
// across versions: tools and alerts match on it. Where Liqo has a word for
// the same failure, the reason is Liqo's. Liqo's own reasons, which gitpeer
// writes in Liqo's objects, stay with those objects (package liqo).
// test/structure checks that docs/trust.md or docs/deploy.md documents
// every reason.
package reasons
