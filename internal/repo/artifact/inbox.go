package artifact

import (
	"strings"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// Sender is the part a cluster plays toward the cluster whose inbox it
// writes, clusters/<to>/inbox/<from>/: <to>'s provider, <to>'s consumer,
// both when the two peer both ways, or neither (nothing is expected).
type Sender struct {
	// Provider: <from> provides for <to>, so it sends nonce.yaml,
	// identity.yaml and one answer per slice request
	// (SliceAnswerFile, resourceslice-<name>.status.yaml).
	Provider bool
	// Consumer: <from> consumes from <to>, so it sends tenant.yaml and one
	// request per slice (SliceFile, resourceslice-<name>.yaml).
	Consumer bool
}

// InboxArtifact reports whether name, a path relative to an inbox folder
// clusters/<to>/inbox/<from>/, is an artifact a writer in the parts from
// sends there: by name only, at the folder's top level, the manifest that
// signs the folder included. It is the whole list of files a reader acts
// on in an inbox (and a reconciler writes into one; manifest.yaml whatever
// the parts, a tombstone staying after them); whether the content
// checks out is for the artifact's own check.
func InboxArtifact(name string, from Sender) bool {
	if strings.Contains(name, "/") {
		return false
	}
	switch name {
	case dirmanifest.FileName:
		// Whatever the parts: a writer's folder stays signed after the
		// spec ends them, as a tombstone (a manifest with no files) of
		// its withdrawal. Whether it verifies is the manifest's check.
		return true
	case layout.NonceFile, layout.IdentityFile:
		return from.Provider
	case layout.TenantFile:
		return from.Consumer
	}
	if _, ok := SliceAnswerName(name); ok {
		return from.Provider
	}
	if _, ok := SliceName(name); ok {
		return from.Consumer
	}
	return false
}

// InboxArtifacts names the artifacts a writer in the parts from sends, for
// messages: e.g. "nonce.yaml, identity.yaml, resourceslice-<name>.status.yaml";
// "none" for a writer in neither part.
func InboxArtifacts(from Sender) string {
	var names []string
	if from.Provider {
		names = append(names, layout.NonceFile, layout.IdentityFile, SliceAnswerFile("<name>"))
	}
	if from.Consumer {
		names = append(names, layout.TenantFile, SliceFile("<name>"))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Part says in words which parts from plays toward to, for messages:
// "beta's provider", "beta's consumer", "beta's provider and consumer" or
// "no peer of beta".
func (from Sender) Part(to string) string {
	switch {
	case from.Provider && from.Consumer:
		return to + "'s provider and consumer"
	case from.Provider:
		return to + "'s provider"
	case from.Consumer:
		return to + "'s consumer"
	}
	return "no peer of " + to
}
