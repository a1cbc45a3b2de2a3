package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gitpeer/gitpeer/gitauth"
)

// warnUnknownCredentials writes a warning on w naming the files of the
// credentials directory that gitpeer does not read, and the names it
// reads: a key stored under another name (id_ed25519, known-hosts, token)
// is otherwise ignored, and the failure that follows names only the file
// found missing.
func warnUnknownCredentials(w io.Writer, creds *gitauth.Source) {
	unknown := creds.UnknownFiles()
	if len(unknown) == 0 {
		return
	}
	fmt.Fprintf(w, "warning: --git-credentials %s: ignoring %s: gitpeer reads only the keys of Flux's Git Secret: %s (identity.pub is ignored); rename the file if it is one of those\n",
		creds.Dir(), strings.Join(unknown, ", "), strings.Join(gitauth.Files(), ", "))
}
