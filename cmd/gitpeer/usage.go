package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usageMessage is err's message as run prints it after "gitpeer: ". For a
// mistake in how cmd was called (an unknown command or flag, a flag's bad
// value, a required flag missing, arguments it does not take) it is
// followed, as kubectl and cobra say it, by a did-you-mean for an unknown
// flag close to one of cmd's (cobra gives one for an unknown command) and
// "Run 'CMD --help' for usage.". cmd is the command cobra ran or, for an
// unknown command, the one it was looked up in; nil adds nothing.
func usageMessage(cmd *cobra.Command, err error) string {
	msg := err.Error()
	if cmd == nil || !isUsageError(err) {
		return msg
	}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) && ne.GetSpecifiedName() != "" {
		if near := nearFlags(cmd, ne.GetSpecifiedName()); len(near) > 0 {
			msg += "\n\nDid you mean this?\n\t--" + strings.Join(near, "\n\t--") + "\n"
		}
	}
	if strings.HasSuffix(msg, "\n") {
		msg += "\n" // after a did-you-mean, a blank line, as cobra prints it
	} else {
		msg += "\n"
	}
	return msg + fmt.Sprintf("Run '%s --help' for usage.", cmd.CommandPath())
}

// isUsageError reports whether err says the command line is wrong, rather
// than what the command did: pflag's errors (an unknown flag, a value
// missing or invalid) and cobra's, which are not typed and are known by
// their words.
func isUsageError(err error) bool {
	var (
		notExist *pflag.NotExistError
		required *pflag.ValueRequiredError
		invalid  *pflag.InvalidValueError
		syntax   *pflag.InvalidSyntaxError
	)
	if errors.As(err, &notExist) || errors.As(err, &required) || errors.As(err, &invalid) || errors.As(err, &syntax) {
		return true
	}
	msg := err.Error()
	for _, prefix := range []string{"unknown command ", "required flag(s) ", "accepts at most ", "accepts between ", "accepts ", "requires at least ", "if any flags in the group "} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// nearFlags are the names of cmd's visible flags (its own and those it
// inherits) within cmd's SuggestionsMinimumDistance (default 2) edits of
// name, or that name begins, in the order cmd lists them.
func nearFlags(cmd *cobra.Command, name string) []string {
	dist := cmd.SuggestionsMinimumDistance
	if dist <= 0 {
		dist = 2
	}
	var out []string
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		if levenshtein(strings.ToLower(name), strings.ToLower(f.Name)) <= dist || (len(name) > 1 && strings.HasPrefix(f.Name, name)) {
			out = append(out, f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return out
}

// levenshtein is the edit distance between a and b, in bytes (flag names
// are ASCII).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
