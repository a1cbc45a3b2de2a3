package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"cuelang.org/go/cue"
	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/layout"
	"github.com/gitpeer/gitpeer/policy"
	"github.com/gitpeer/gitpeer/reconcile"
	"github.com/gitpeer/gitpeer/schema"
)

// validateOptions are validate's flags: the revisions to read the spec
// at and to compare it with.
type validateOptions struct {
	ref, base string
}

func newValidateCmd() *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate [DIR]",
		Short: "Check the peering spec of a repo against the schema, the providers' classes and the published keys",
		Long: `validate loads DIR/peering.cue (or peering.yaml) and checks it against the
embedded CUE schema: cluster IDs are DNS-1123 labels of at most 51 characters,
every peering names two different declared clusters, no peering is declared
twice, pinned fingerprints and owners are well-formed.

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
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.Flags().StringVar(&o.ref, "ref", "", refFlagUsage)
	cmd.Flags().StringVar(&o.base, "base", "", "compare with the spec at this revision (a pull request's base) to name the peerings the change revokes; default: what clusters/*/status.yaml report live")
	addSpecLimitFlags(cmd)
	return cmd
}

// run is validate's body: nil when the spec is valid, errProblems (exit 1)
// after printing its problems.
func (o *validateOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkNotURL("validate", dirArg(args)); err != nil {
		return err
	}
	src, err := openLocal(dirArg(args), o.ref, "--ref")
	if err != nil {
		return err
	}
	defer src.Close()
	spec, file, data, err := loadSpec(cmd, src)
	if err != nil {
		return err
	}
	problems, err := reviewSpec(src, file, data, spec)
	if err != nil {
		return err
	}
	baseSpec, err := specAtBase(cmd, dirArg(args), o.base, &readSpec{file, data, spec})
	if err != nil {
		return err
	}
	changes := reviewSpecChanges(src.Tree, file, data, spec, baseSpec, o.base)
	problems = append(problems, changes.Problems...)
	printSpecChanges(cmd, changes)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(cmd.OutOrStdout(), p.String())
		}
		return errProblems
	}
	at := ""
	if src.Commit != "" {
		at = fmt.Sprintf(" at %s (%s)", src.Rev, shortCommit(src.Commit))
	}
	revokes := ""
	if n := len(changes.Revoked); n > 0 {
		revokes = fmt.Sprintf(", revokes %d live peering(s): see the WARNING", n)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s%s: valid (%d clusters, %d peerings)%s\n", file, at, len(spec.Clusters), len(spec.Peerings), revokes)
	return nil
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
							p.Provider, s.Name, policy.ReasonSliceOverClassTotal, msg)))
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
