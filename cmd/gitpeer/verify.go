package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/internal/atomicfile"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/verify"
	"github.com/gitpeer/gitpeer/schema"
)

// errUsage exits 2: verify could not check (bad flag, bad spec, unreadable
// repository), as distinct from checks that found something (1).
func errUsage(err error) error { return &exitError{code: 2, err: err} }

// verifyOptions are verify's flags: what to check, against which
// revisions, and how to print what it finds.
type verifyOptions struct {
	output, base, ref, checkpoint   string
	history, requireManifests, full bool
	strict                          bool
}

func newVerifyCmd() *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify [DIR]",
		Short: "Check a peering repo as Flux would apply it, offline",
		Long: `verify runs, over a repo and with no private material, every check the
reconcilers make, and checks the repo as Flux would apply it:

  - artifacts: each Tenant's signature over the nonce its provider published,
    its CSR and key against clusters/<consumer>/cluster.yaml (and the spec's
    fingerprint); each Identity's CA and API server against the provider's
    cluster.yaml and its certificate against the consumer's key; no Identity
    without a valid Tenant; every file under clusters/<id>/liqo/ exactly an
    object gitpeer renders from them;
  - signed writes: every directory a cluster writes (clusters/<id>/ and
    clusters/<to>/inbox/<from>/) lists each file in a manifest.yaml signed
    with the key the writer publishes; a file not listed, or changed, is an
    UnsignedChange;
  - kustomize: each clusters/<id>/ built as Flux's kustomize-controller builds
    it, on that cluster's tree alone; remote bases (RemoteBase) and paths
    outside the tree or into its inbox (OutsideReference) are refused, in
    every kustomization; every object built must be one gitpeer renders
    (UnexpectedObject);
  - private material (keys, client-key kubeconfigs, AWS secrets) in any file
    of the tree;
  - in a Git repository, every commit reachable from HEAD, merges included:
    each change to a writer's directory vouched for by the writer's manifest
    at that commit (trailers are not trusted), each change of a cluster's
    key, API server or CA signed by the previous key (KeyChanged), each SSH
    commit signature made with a cluster's key valid (BadCommitSignature),
    and each commit a cluster signed confined to what that cluster may
    write (OwnershipViolation); each file under clusters/<id>/liqo/ of a
    peering the spec no longer holds written while the spec still held it,
    or in the form its revocation renders (PeeringNotInSpec otherwise);
  - each applied branch the clone holds (gitpeer/applied/<id>, as a branch
    or remote-tracking ref): its head a seal of that cluster, signed by its
    key, of clusters/<id>/ alone less its inbox (InvalidSeal), and holding
    every change the cluster's key signed to its tree after the seal's
    parent that the branch checked still holds (StaleSeal: the branch was
    moved back to an old seal, or a pass has not pushed its seal yet). Not
    with --base. A clone of main alone has none: fetch them with
      git fetch origin '+refs/heads/gitpeer/applied/*:refs/remotes/origin/gitpeer/applied/*'

  - files that change what Git hosts, CI checkouts or GitOps engines see,
    anywhere in the tree: a .gitattributes rule that rewrites (ident, text,
    eol, crlf, filter, working-tree-encoding, export-subst, export-ignore)
    the spec or a path under clusters/ (AttributesRewrite), a .sourceignore
    at the root or under clusters/ (SourceIgnore), .gitmodules and
    submodule entries (Submodule), symbolic links (SymbolicLink).

` + committedTreeHelp + ` The commits judged are those reachable from
--ref.

--base REF judges only the commits that REF lacks (a pull request's), and
checks of the tree only what they changed since REF and what depends on it:
the trees of the clusters whose files they touched (an inbox counts for its
writer too), of every cluster peering with or reading a cluster whose
cluster.yaml or spec declaration changed, and of both sides of each peering
the spec adds, removes or changes; any other changed file for private
material. A changed .gitattributes, .gitmodules, .sourceignore or a
kustomization outside clusters/ has the whole tree checked. stderr names the
scope ("checked 3 of 1,000 clusters: ..."). The tree at REF was checked when
it merged: a finding already there, in a cluster the change does not touch,
is for the full check (verify without --base, or --base REF --full, which
checks the whole tree and still judges only the commits since REF). It also
compares the spec with the one at REF as validate --base does: a new
cluster ID close to one the change drops is a MisspelledCluster finding; the
live peerings the change removes are printed on stderr as a WARNING (they
are revoked; not a finding, since a removal may be meant).
--history also scans every blob of every commit for private material.

--checkpoint FILE starts from a checkpoint: a commit a previous run with
the same gitpeer and options found green, recorded in FILE (outside the
repo: a CI cache, kept like a known_hosts). verify then judges only the
commits since it and checks of the tree what they changed and what depends
on it (as --base does), and judges every applied branch; a run with no
failing finding writes the commit it checked to FILE. A missing or
unreadable FILE, or one of another repo, gitpeer or options, is a run of
everything (stderr says why); a checkpoint whose commit is not in the
history checked (rewritten since) is a CheckpointNotAncestor finding, and
everything is checked: once the rewrite is reviewed, delete FILE. Past the
expiry of a certificate it checked, or when an applied branch's seal is
older than it and stale or not by history alone, everything is checked too.

A spec whose evaluation takes longer than --spec-timeout or more memory than
--spec-memory is refused.

History tells legitimate work from attacks: a finding that a later signed
state resolved is listed apart, as resolved, and does not fail the check:
  - Repaired: a change its writer did not sign (a hand edit) to a path that
    is, at the commit checked, again exactly as the writer's manifest signs
    it (its reconciler's next pass repaired it);
  - Repinned: a key changed without a rotation statement (a lost key, then
    gitpeer init), which every peer's admin re-pinned (gitpeer trust): each
    peer's reconciler records that in clusters/<peer>/repins.yaml, signed;
  - KeyRotationInProgress: a finding of the tree on a file left as it was
    before a cluster of its peering rotated its key with a valid rotation
    statement, which held no finding then (a peer keeps the old grant or
    Identity until it answers the new key).
--strict fails on those too: on any finding in history.

Output: one line per finding (file: field: message (Reason, commit)), then
the resolved ones under "resolved:" (each line ends "; resolved: what
resolved it (Reason, commit)"), or with -o json or yaml a FindingList
(apiVersion gitpeer.io/v1alpha1, kind FindingList, items: the findings that
fail, resolved: those resolved, left out when none), each item {file,
field, reason, message, commit}, a resolved one with resolved {reason,
message, commit}. Exit status: 0 when every check holds (resolved findings
aside, unless --strict), 1 when something was found, 2 when verify could
not check (bad flag or spec, a spec over its limits, unreadable repository,
unknown --base or --ref).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return errUsage(err) })
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: "+strings.Join(listFormats, ", "))
	cmd.Flags().BoolVar(&o.history, "history", false, "also scan every blob of every commit for private material")
	cmd.Flags().StringVar(&o.base, "base", "", "judge only the commits reachable from HEAD but not from this revision (a pull request's base), and only the clusters they touch and those depending on them")
	cmd.Flags().BoolVar(&o.full, "full", false, "with --base, check the whole tree (the commits judged are still those since --base)")
	cmd.Flags().StringVar(&o.ref, "ref", "", refFlagUsage+"; the commits judged are those reachable from it")
	cmd.Flags().BoolVar(&o.strict, "strict", false, "fail on every finding in history, also those a later signed state resolved (a repaired hand edit, a re-pinned key, a rotation in progress)")
	cmd.Flags().StringVar(&o.checkpoint, "checkpoint", "", "start from the commit a previous green run recorded in this file (kept outside the repo, e.g. a CI cache), and record the commit checked there when every check holds")
	cmd.Flags().BoolVar(&o.requireManifests, "require-manifests", true, "require a signed manifest in every writer's directory; false only for repos written before manifests")
	addSpecLimitFlags(cmd)
	return cmd
}

// noAppliedNote is what verify says when the clone holds no applied
// branch: the applied heads were not checked.
const noAppliedNote = "note: no applied branch (gitpeer/applied/<id>) in this clone: no applied head was checked; " +
	"fetch them with git fetch origin '+refs/heads/gitpeer/applied/*:refs/remotes/origin/gitpeer/applied/*'"

// run is verify's body: nil when every check holds, errProblems (exit 1)
// when it found something, errUsage (exit 2) when it could not check.
func (o *verifyOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkFormat(o.output, listFormats); err != nil {
		return errUsage(err)
	}
	if o.full && o.base == "" {
		return errUsage(errors.New("--full goes with --base: without --base, verify checks the whole tree already; drop --full, or give the pull request's base with --base REF"))
	}
	if o.checkpoint != "" && o.base != "" {
		return errUsage(errors.New("--checkpoint goes without --base: --base judges a pull request against its base, --checkpoint a branch from the commit a previous green run recorded; give one"))
	}
	if fi, err := os.Stat(o.checkpoint); o.checkpoint != "" && err == nil && fi.IsDir() {
		return errUsage(fmt.Errorf("--checkpoint %s is a directory: give the path of a file there, e.g. %s", o.checkpoint, filepath.Join(o.checkpoint, "gitpeer-verify.checkpoint")))
	}
	dir := dirArg(args)
	if err := checkNotURL("verify", dir); err != nil {
		return errUsage(err)
	}
	lim, err := specLimits(cmd)
	if err != nil {
		return errUsage(err)
	}
	src, err := openLocal(dir, o.ref, "--ref")
	if err != nil {
		return errUsage(err)
	}
	defer src.Close()
	if o.checkpoint != "" && src.Commit == "" {
		return errUsage(fmt.Errorf("--checkpoint: %s is not a Git repository with a commit: a checkpoint is a commit found green", dir))
	}
	file, data, err := schema.FindSpec(src.Tree, src.Dir)
	if err != nil {
		if src.Commit != "" {
			err = fmt.Errorf("%s: %w", src.Where(), err)
		}
		return errUsage(err)
	}
	noteWorktree(cmd, src, file, data)
	spec, err := schema.ParseBounded(cmd.Context(), file, data, lim)
	if err != nil {
		return errUsage(err)
	}
	baseSpec, err := specAtBase(cmd, dir, o.base, &readSpec{file, data, spec})
	if err != nil {
		return errUsage(err)
	}
	applied := false
	stderr := cmd.ErrOrStderr()
	var cp, next *verify.Checkpoint
	digest := o.checkpointDigest()
	if o.checkpoint != "" {
		cp = readCheckpoint(stderr, o.checkpoint, digest)
	}
	opts := verify.Options{
		Now:              time.Now(),
		RequireManifests: o.requireManifests,
		History:          o.history,
		Base:             o.base,
		BaseSpec:         baseSpec,
		Ref:              src.Commit, // the commit the spec was read from
		Full:             o.full,
		OnScope:          func(s verify.Scope) { fmt.Fprintln(cmd.ErrOrStderr(), s) },
		OnApplied:        func([]string) { applied = true },
		// The specs of older commits are no more trusted than this one.
		ParseSpec: func(file string, data []byte) (*schema.Spec, error) {
			return schema.ParseBounded(cmd.Context(), file, data, lim)
		},
	}
	if o.checkpoint != "" {
		opts.Checkpoint = cp
		opts.OnNote = func(s string) { fmt.Fprintf(stderr, "note: checkpoint %s: %s\n", o.checkpoint, s) }
		opts.OnCheckpoint = func(c *verify.Checkpoint) { next = c }
	}
	findings, err := verify.Check(dir, spec, opts)
	if err != nil {
		return errUsage(err)
	}
	for i := range findings {
		if findings[i].Reason == reasons.CheckpointNotAncestor {
			findings[i].File = o.checkpoint
		}
	}
	if !applied && o.base == "" && src.Commit != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), noAppliedNote)
	}
	if o.base != "" {
		changes := reviewSpecChanges(src.Tree, file, data, spec, baseSpec, o.base)
		for _, p := range changes.Problems {
			findings = append(findings, verify.Finding{File: file, Field: p.Path, Reason: reasons.MisspelledCluster, Message: p.Message})
		}
		fmt.Fprint(cmd.ErrOrStderr(), revocationWarning(changes.Revoked))
	}
	if err := o.report(cmd, src, spec, findings); err != nil {
		return err
	}
	if next != nil {
		next.Options = digest
		if err := writeCheckpoint(o.checkpoint, next); err != nil {
			// The verdict is the checks'; the next run checks everything.
			fmt.Fprintf(stderr, "WARNING: checkpoint %s not recorded: %v\n", o.checkpoint, err)
		} else {
			fmt.Fprintf(stderr, "checkpoint %s: %s recorded, the next run starts from it\n", o.checkpoint, next.Commit[:12])
		}
	}
	return nil
}

// checkpointDigest is the digest of what makes two runs' verdicts the
// same, a checkpoint's Options: gitpeer's version and revision, and the
// options that change what fails (a checkpoint of a run with other
// options is not used).
func (o *verifyOptions) checkpointDigest() string {
	sum := sha256.Sum256(fmt.Appendf(nil, "gitpeer verify checkpoint\nversion %s\nrevision %s\nrequire-manifests %t\nstrict %t\nhistory %t\n",
		buildVersion(), buildRevision(), o.requireManifests, o.strict, o.history))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// readCheckpoint reads the checkpoint file path: nil, with a note on w,
// when there is none, it is unreadable, or of another digest.
func readCheckpoint(w io.Writer, path, digest string) *verify.Checkpoint {
	data, err := readFileLimit(path, verify.MaxCheckpointSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(w, "note: no checkpoint at %s yet: everything is checked, and the commit checked is recorded there if every check holds\n", path)
		return nil
	case err != nil:
		fmt.Fprintf(w, "note: checkpoint %s: %v: not used, everything is checked\n", path, err)
		return nil
	}
	cp, err := verify.ParseCheckpoint(path, data)
	if err != nil {
		fmt.Fprintf(w, "note: checkpoint %v: not used, everything is checked\n", err)
		return nil
	}
	if cp.Options != digest {
		fmt.Fprintf(w, "note: checkpoint %s was recorded by another gitpeer version or with other options (--strict, --history, --require-manifests): not used, everything is checked\n", path)
		return nil
	}
	return cp
}

// readFileLimit reads path, refusing more than limit bytes.
func readFileLimit(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("more than %d bytes", limit)
	}
	return data, nil
}

// writeCheckpoint replaces the checkpoint file path with cp, atomically,
// creating its directory.
func writeCheckpoint(path string, cp *verify.Checkpoint) error {
	data, err := cp.Marshal()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}

// findingList is verify's -o json|yaml output: a FindingList whose items
// are the findings that fail the check and resolved those a later signed
// state resolved (left out when none, so a clean repo's list is as before).
type findingList struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Items      []verify.Finding `json:"items"`
	Resolved   []verify.Finding `json:"resolved,omitempty"`
}

// report prints findings in --output's format, or that every check holds
// over spec's peerings in src: errProblems when some fail (any, with
// --strict; else those no later signed state resolved).
func (o *verifyOptions) report(cmd *cobra.Command, src *repoSource, spec *schema.Spec, findings []verify.Finding) error {
	open, resolved := []verify.Finding{}, []verify.Finding(nil)
	for _, f := range findings {
		if f.Resolved != nil {
			resolved = append(resolved, f)
		} else {
			open = append(open, f)
		}
	}
	if o.output != "text" {
		if err := writeObject(cmd.OutOrStdout(), o.output, findingList{APIVersion: layout.APIVersion, Kind: kindFindingList, Items: open, Resolved: resolved}); err != nil {
			return errUsage(err)
		}
	} else {
		for _, f := range open {
			fmt.Fprintln(cmd.OutOrStdout(), f.String())
		}
		if len(resolved) > 0 {
			note := "not failing the check; --strict fails on them"
			if o.strict {
				note = "failing the check: --strict"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "resolved (%s):\n", note)
			for _, f := range resolved {
				fmt.Fprintln(cmd.OutOrStdout(), "  "+f.String())
			}
		}
	}
	if len(verify.Failing(findings, o.strict)) > 0 {
		return errProblems
	}
	if o.output == "text" {
		held := fmt.Sprintf("%s: every check holds (%d peerings)", src.Where(), len(spec.Peerings))
		if len(resolved) > 0 {
			held += fmt.Sprintf("; %d findings resolved", len(resolved))
		}
		fmt.Fprintln(cmd.OutOrStdout(), held)
	}
	return nil
}
