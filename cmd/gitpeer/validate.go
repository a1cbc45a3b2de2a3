package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"cuelang.org/go/cue"
	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/internal/liqo/policy"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

// validateOptions are validate's flags: the revisions to read the spec
// at and to compare it with, and the name of a spec read from stdin.
type validateOptions struct {
	ref, base, stdinName string
}

func newValidateCmd() *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate [DIR | FILE... | -]",
		Short: "Check the peering spec of a repo against the schema, the providers' classes and the published keys",
		Long: `validate checks a peering spec against the embedded CUE schema: cluster IDs
are DNS-1123 labels of at most 51 characters, every peering names two
different declared clusters, no peering is declared twice, pinned
fingerprints and owners are well-formed.

What it reads:

  - DIR (default "."): its peering.cue (or peering.yaml). In a Git
    repository, the commit --ref names (default HEAD), from Git objects,
    as the reconcilers read it (see below). In a checkout whose spec file
    differs from the committed one (an uncommitted edit, or a
    .gitattributes rule rewriting it), and without --ref, both are
    checked, the worktree's first, each under a line saying which it is,
    and validate fails if either is invalid.
  - FILE...: each spec file as it is on disk (a name ending in .cue is
    CUE, anything else YAML), checked against the repo of its directory
    as it stands on disk (at --ref when given): what an editor sees.
  - "-": a spec read from stdin, named --stdin-name in messages (its
    extension picks CUE or YAML), checked against the repo in "." as it
    stands (at --ref when given). A pre-commit hook checks the staged spec
    so (examples/ci/pre-commit):
      git show :peering.cue | gitpeer validate -

` + committedTreeHelp + `

It then checks what the reconcilers would refuse later, against the repo:

  - every slice asks for a class its provider offers (Liqo's "default"
    class, cpu 4, memory 8Gi, pods 110, ephemeral-storage 20Gi, when the
    provider declares none), and for no resource beyond that class's caps
    or without a cap there: the provider would deny the slice;
  - a cluster's fingerprint is the one of the key its clusters/<id>/
    cluster.yaml publishes (when published): a pinned provider would
    refuse its Tenant.

And it names what the spec does to live peerings, comparing it with the
spec at --base REF (a pull request's base) when given, else with what the
published clusters' status.yaml files report (a peering past Pending is
live):

  - a cluster ID with no clusters/<id>/cluster.yaml that is close to a
    published cluster (or one the base declared) the spec no longer
    declares: a misspelling or a rename, which would revoke that
    cluster's peerings. A problem, with "did you mean";
  - a live peering the spec no longer declares: its provider revokes it.
    Deliberate, so not a problem, but a WARNING on stderr listing each
    one, and "revokes N live peering(s)" on the summary line;
  - a cluster whose cluster.yaml is not published yet: a note on stderr
    (its peerings wait for 'gitpeer init' on it).

Each problem is printed as file:line:col: path: message (the position of
the value in the spec when it is written out literally). Exit status: 0
valid, 1 problems found.

A spec whose evaluation takes longer than --spec-timeout or more memory than
--spec-memory is refused, here and by every command that reads it.`,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.Flags().StringVar(&o.ref, "ref", "", refFlagUsage+"; with FILE or -, the revision the rest of the repo (published cluster.yaml, status.yaml) is read at")
	cmd.Flags().StringVar(&o.base, "base", "", "compare with the spec at this revision (a pull request's base) to name the peerings the change revokes; default: what clusters/*/status.yaml report live")
	cmd.Flags().StringVar(&o.stdinName, "stdin-name", "peering.cue", `with "-": the name of the spec read from stdin, in messages; ".cue" is read as CUE, anything else as YAML`)
	addSpecLimitFlags(cmd)
	return cmd
}

// specInput is one spec validate checks: its path as messages name it, its
// bytes, what it is ("" for a committed or plain-directory spec, which
// name their revision themselves; "worktree, not committed", "stdin"),
// and the repo it is checked against (its published cluster.yaml and
// status.yaml files, and the directory a --base is read in).
type specInput struct {
	file  string
	data  []byte
	label string
	src   *repoSource
	dir   string
}

// run is validate's body: nil when every spec read is valid, errProblems
// (exit 1) after printing the problems of any.
func (o *validateOptions) run(cmd *cobra.Command, args []string) error {
	inputs, closeAll, err := o.inputs(cmd, args)
	defer closeAll()
	if err != nil {
		return err
	}
	failed := false
	for _, in := range inputs {
		ok, err := o.check(cmd, in, len(inputs) > 1)
		if err != nil {
			return err
		}
		failed = failed || !ok
	}
	if failed {
		return errProblems
	}
	return nil
}

// inputs resolves validate's arguments into the specs to check: a DIR's
// committed spec (and its worktree's when that differs), FILEs as on
// disk, or stdin. closeAll releases the repos opened, whatever the error.
func (o *validateOptions) inputs(cmd *cobra.Command, args []string) (ins []specInput, closeAll func(), err error) {
	var opened []*repoSource
	closeAll = func() {
		for _, s := range opened {
			s.Close()
		}
	}
	open := func(dir string) (*repoSource, error) {
		src, err := openLocal(dir, o.ref, "--ref")
		if err == nil {
			opened = append(opened, src)
		}
		return src, err
	}
	// A FILE or stdin is checked against its repo as it stands on disk
	// (what an editor or a pre-commit hook sees, even before the first
	// commit), or at --ref when given.
	onDisk := func(dir string) (*repoSource, error) {
		if o.ref != "" {
			return open(dir)
		}
		return &repoSource{Dir: dir, Tree: layout.NewTree(dir)}, nil
	}
	if o.stdinName != "peering.cue" && !slices.Contains(args, "-") {
		return nil, closeAll, errors.New(`--stdin-name names a spec read from stdin: pass "-" to read one`)
	}
	switch {
	case len(args) == 1 && args[0] == "-":
		src, err := onDisk(".")
		if err != nil {
			return nil, closeAll, err
		}
		data, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), schema.MaxSpecSize+1))
		if err != nil {
			return nil, closeAll, fmt.Errorf("read the spec from stdin: %w", err)
		}
		return []specInput{{file: o.stdinName, data: data, label: "stdin", src: src, dir: "."}}, closeAll, nil
	case slices.Contains(args, "-"):
		return nil, closeAll, errors.New(`"-" reads one spec from stdin: pass it alone`)
	case len(args) == 0:
		args = []string{"."}
	}
	if err := checkNotURL("validate", args[0]); err != nil {
		return nil, closeAll, err
	}
	if fi, err := os.Stat(args[0]); len(args) == 1 && (err != nil || fi.IsDir()) {
		return o.dirInputs(cmd, args[0], open)
	}
	for _, file := range args {
		fi, err := os.Stat(file)
		switch {
		case err != nil:
			return nil, closeAll, err
		case fi.IsDir():
			return nil, closeAll, fmt.Errorf("%s is a directory: pass one DIR, or spec FILEs", file)
		}
		data, err := readSpecFile(file)
		if err != nil {
			return nil, closeAll, err
		}
		dir := filepath.Dir(file)
		src, err := onDisk(dir)
		if err != nil {
			return nil, closeAll, err
		}
		ins = append(ins, specInput{file: file, data: data, src: src, dir: dir})
	}
	return ins, closeAll, nil
}

// dirInputs are the specs of DIR: the one its tree holds (a commit's in a
// Git repository) and, in a checkout without --ref, the worktree's when it
// is another file or holds other bytes.
func (o *validateOptions) dirInputs(cmd *cobra.Command, dir string, open func(string) (*repoSource, error)) ([]specInput, func(), error) {
	src, err := open(dir)
	if err != nil {
		return nil, func() {}, err
	}
	file, data, err := schema.FindSpec(src.Tree, src.Dir)
	if err != nil {
		if src.Commit != "" {
			err = fmt.Errorf("%s: %w", src.Where(), err)
		}
		return nil, func() {}, err
	}
	committed := specInput{file: file, data: data, src: src, dir: dir}
	if src.Commit == "" || !isCheckout(dir) {
		return []specInput{committed}, func() {}, nil
	}
	if o.ref != "" {
		noteWorktree(cmd, src, file, data) // an explicit revision: that one alone
		return []specInput{committed}, func() {}, nil
	}
	wfile, wdata, err := schema.FindSpec(layout.NewTree(dir), dir)
	if err != nil {
		return nil, func() {}, fmt.Errorf("the worktree of %s: %w (the spec committed at %s is %s)", dir, err, src.Rev, file)
	}
	if wfile == file && bytes.Equal(wdata, data) {
		return []specInput{committed}, func() {}, nil
	}
	committedName := "the one"
	if wfile != file {
		committedName = "the " + file
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "note: %s in the worktree is not %s committed at %s (%s): an uncommitted edit, or a .gitattributes rule rewriting it (gitpeer verify names it); checking both, the worktree's first: the reconcilers read the committed one\n",
		wfile, committedName, src.Rev, shortCommit(src.Commit))
	return []specInput{{file: wfile, data: wdata, label: "worktree, not committed", src: src, dir: dir}, committed}, func() {}, nil
}

// readSpecFile reads a spec FILE as it is on disk, at most one byte more
// than a spec may hold (schema.Parse refuses more).
func readSpecFile(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, schema.MaxSpecSize+1))
}

// check validates one spec: it prints its problems (and, when several
// specs are checked (summarize) or this one is not the repo's, a line
// saying which spec had them), or its summary line when valid. ok is false when it had problems.
func (o *validateOptions) check(cmd *cobra.Command, in specInput, summarize bool) (ok bool, err error) {
	out := cmd.OutOrStdout()
	name := in.file
	switch {
	case in.label != "":
		name = fmt.Sprintf("%s (%s)", in.file, in.label)
	case in.src.Commit != "":
		name = fmt.Sprintf("%s at %s (%s)", in.file, in.src.Rev, shortCommit(in.src.Commit))
	}
	problems, spec, err := o.problems(cmd, in)
	if err != nil {
		return false, err
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(out, p.String())
		}
		if summarize || in.label != "" {
			fmt.Fprintf(out, "%s: %d problem(s)\n", name, len(problems))
		}
		return false, nil
	}
	revokes := ""
	if n := len(spec.revoked); n > 0 {
		revokes = fmt.Sprintf(", revokes %d live peering(s): see the WARNING", n)
	}
	fmt.Fprintf(out, "%s: valid (%d clusters, %d peerings)%s\n", name, len(spec.Clusters), len(spec.Peerings), revokes)
	return true, nil
}

// checkedSpec is a spec that parsed, with the live peerings it revokes.
type checkedSpec struct {
	*schema.Spec
	revoked []string
}

// problems parses in within the spec limits and, when it parses, reviews
// it against its repo and the base: every problem found, and the spec.
// The revocation WARNING and notes go to stderr.
func (o *validateOptions) problems(cmd *cobra.Command, in specInput) ([]schema.Problem, checkedSpec, error) {
	lim, err := specLimits(cmd)
	if err != nil {
		return nil, checkedSpec{}, err
	}
	spec, err := schema.ParseBounded(cmd.Context(), in.file, in.data, lim)
	var se *schema.Error
	if errors.As(err, &se) {
		return se.Problems, checkedSpec{}, nil
	}
	if err != nil {
		return nil, checkedSpec{}, err
	}
	problems, err := reviewSpec(in.src, in.file, in.data, spec)
	if err != nil {
		return nil, checkedSpec{}, err
	}
	baseSpec, err := specAtBase(cmd, in.dir, o.base, &readSpec{in.file, in.data, spec})
	if err != nil {
		return nil, checkedSpec{}, err
	}
	changes := reviewSpecChanges(in.src.Tree, in.file, in.data, spec, baseSpec, o.base)
	printSpecChanges(cmd, changes)
	return append(problems, changes.Problems...), checkedSpec{spec, changes.Revoked}, nil
}

// reviewSpec finds what a valid spec (loaded from file, whose bytes are
// data, in src) asks for that the reconcilers would refuse: slices a provider would
// deny for their class or caps (policy.Check over the classes its
// reconciler decides with) or for the class total of the slices listed
// before them (policy.Budget), slices listed twice, and fingerprints other than the key a
// cluster.yaml publishes. Problems are positioned in the spec; those of a
// malformed cluster.yaml name that file and its field.
func reviewSpec(src *repoSource, file string, data []byte, spec *schema.Spec) ([]schema.Problem, error) {
	at := schema.NewLocator(file, data)
	problems, err := reviewFingerprints(src, at, spec)
	if err != nil {
		return nil, err
	}
	denied, err := reviewSlices(at, spec)
	if err != nil {
		return nil, err
	}
	return append(problems, denied...), nil
}

// cuePath is the CUE path of sels, as problems name a field of the spec.
func cuePath(sels ...cue.Selector) string { return cue.MakePath(sels...).String() }

// reviewFingerprints finds the spec's fingerprints other than the key a
// cluster.yaml of src publishes, positioned by at, and the malformed
// cluster.yaml files it reads, naming the file and its field.
func reviewFingerprints(src *repoSource, at *schema.Locator, spec *schema.Spec) ([]schema.Problem, error) {
	var problems []schema.Problem
	for i, c := range spec.Clusters {
		if c.Fingerprint == "" {
			continue
		}
		info, err := layout.ReadClusterInfo(src.Tree, c.ID)
		var fe *layout.FieldError
		switch {
		case errors.Is(err, layout.ErrNotPublished):
			continue // nothing to compare with yet
		case errors.As(err, &fe):
			problems = append(problems, schema.Problem{File: filepath.Join(src.Dir, fe.File), Path: fe.Field, Message: fe.Reason})
			continue
		case err != nil:
			return nil, err
		}
		if info.Fingerprint != c.Fingerprint {
			problems = append(problems, at.Problem(cuePath(cue.Str("clusters"), cue.Index(i), cue.Str("fingerprint")),
				fmt.Sprintf("%s is not the key %s publishes in %s (%s): a provider pinning it would refuse %s's Tenant",
					c.Fingerprint, c.ID, layout.ClusterPath(c.ID, layout.ClusterFile), info.Fingerprint, c.ID)))
		}
	}
	return problems, nil
}

// reviewSlices finds the slices of the spec's peerings that their
// provider would deny, positioned by at: for their class or caps, for the
// class total of the slices listed before them, or listed twice.
func reviewSlices(at *schema.Locator, spec *schema.Spec) ([]schema.Problem, error) {
	var problems []schema.Problem
	for i, p := range spec.Peerings {
		classes, err := reconcile.ProviderClasses(spec, p.Provider)
		if err != nil {
			return nil, err
		}
		// The provider decides a peering's slices in the spec's order, each
		// within what the slices before it left of its class (policy.Grant).
		budget := policy.NewBudget(classes)
		seen := map[string]bool{}
		for j, s := range p.Slices {
			slice := []cue.Selector{cue.Str("peerings"), cue.Index(i), cue.Str("slices"), cue.Index(j)}
			resources, err := reconcile.Quantities(s.Resources)
			if err != nil {
				return nil, err // the schema admits only quantities
			}
			if seen[s.Name] {
				problems = append(problems, at.Problem(cuePath(append(slice, cue.Str("name"))...),
					fmt.Sprintf("slice %s is listed twice for %s → %s: %s grants only the first", s.Name, p.Consumer, p.Provider, p.Provider)))
				continue
			}
			seen[s.Name] = true
			_, violations := policy.Check(classes, s.Class, resources)
			if len(violations) == 0 {
				if ok, msg := budget.Take(s.Class, resources); !ok {
					problems = append(problems, at.Problem(cuePath(slice...),
						fmt.Sprintf("%s would deny slice %s: %s: %s (the slices listed before it are granted first)",
							p.Provider, s.Name, reasons.SliceOverClassTotal, msg)))
				}
			}
			for _, v := range violations {
				where := append(slice, cue.Str("resources"), cue.Str(string(v.Resource)))
				if v.Resource == "" {
					where = append(slice, cue.Str("class"))
					if s.Class == "" {
						where = slice
					}
				}
				problems = append(problems, at.Problem(cuePath(where...),
					fmt.Sprintf("%s would deny slice %s: %s", p.Provider, s.Name, v.Message)))
			}
		}
	}
	return problems, nil
}
