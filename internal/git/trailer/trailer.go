// Package trailer is the Git trailers of the commits gitpeer makes: which
// cluster's reconciler made a commit and which handshake steps it takes
// (git interpret-trailers' "Key: value" lines after the message body).
// They are for humans, `git log --format=%(trailers)` and pull request
// descriptions: anyone can write them, so no check relies on a trailer of
// a commit whose signature it did not verify. One is read as a statement:
// Applied, in a commit verify checked was signed by that cluster's key.
package trailer

import (
	"fmt"
	"strings"
)

const (
	// Cluster names the cluster whose reconciler made the commit.
	Cluster = "Gitpeer-Cluster"
	// Step names one step the commit takes, e.g. "send nonce to beta" or
	// "seal"; one trailer per step.
	Step = "Gitpeer-Step"
	// Applied names, as a full hex commit hash, the seal in force when a
	// cluster's reconciler proposed the commit (review branches): the
	// seal its applied branch holds once the pass that proposed it has
	// pushed, and until its first pass after the merge. Signed with the
	// commit, it lets verify tell a merged proposal not sealed yet from a
	// seal moved further back.
	Applied = "Gitpeer-Applied"
)

// Message is the commit message cluster's reconciler writes: the subject
// "<cluster>: <subject>", a blank line, then a Cluster trailer and one Step
// trailer per step, each line ending in a newline.
func Message(cluster, subject string, steps ...string) string {
	return MessageWithBody(cluster, subject, "", steps...)
}

// MessageWithBody is Message with body, when not "", between the subject
// and the trailers, each separated by a blank line. body must not end in
// a paragraph of "Key: value" lines, which Git would read as trailers.
func MessageWithBody(cluster, subject, body string, steps ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n\n", cluster, subject)
	if body = strings.TrimRight(body, "\n"); body != "" {
		b.WriteString(body + "\n\n")
	}
	fmt.Fprintf(&b, "%s: %s\n", Cluster, cluster)
	for _, s := range steps {
		fmt.Fprintf(&b, "%s: %s\n", Step, s)
	}
	return b.String()
}

// Values returns the values of the trailers named key in msg, in order,
// without surrounding white space.
func Values(msg, key string) []string {
	var out []string
	for line := range strings.SplitSeq(msg, "\n") {
		if v, ok := strings.CutPrefix(line, key+": "); ok {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// Append returns msg with the trailer "key: value" added to its trailer
// block: after the last line when msg ends in one (a paragraph of
// "Key: value" lines, as Message writes), else after a blank line. msg
// gets a final newline either way.
func Append(msg, key, value string) string {
	msg = strings.TrimRight(msg, "\n")
	if !endsInTrailers(msg) {
		msg += "\n"
	}
	return msg + "\n" + key + ": " + value + "\n"
}

// endsInTrailers reports whether the last paragraph of msg, not its
// first (the subject), is all "Key: value" lines.
func endsInTrailers(msg string) bool {
	i := strings.LastIndex(msg, "\n\n")
	if i < 0 {
		return false
	}
	for line := range strings.SplitSeq(msg[i+2:], "\n") {
		k, _, ok := strings.Cut(line, ": ")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return false
		}
	}
	return true
}
