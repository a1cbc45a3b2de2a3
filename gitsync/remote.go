package gitsync

import (
	"context"
	"errors"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
)

// pushSpecs pushes specs to origin; already up to date is success. A
// failure carries what the host said on its progress channel (a hook's
// output: why a protected branch was refused) as "remote: " lines.
func (r *Repo) pushSpecs(ctx context.Context, specs ...config.RefSpec) error {
	var said remoteLines
	return r.runPush(ctx, r.pushOptions(&said, specs...), &said)
}

// pushOptions are the options of a push of specs to origin whose progress
// channel goes to said.
func (r *Repo) pushOptions(said *remoteLines, specs ...config.RefSpec) *git.PushOptions {
	return &git.PushOptions{
		RemoteName: "origin",
		RefSpecs:   specs,
		Auth:       r.auth,
		CABundle:   r.caBundle,
		Progress:   said,
	}
}

// runPush pushes with opts, as pushSpecs does.
func (r *Repo) runPush(ctx context.Context, opts *git.PushOptions, said *remoteLines) error {
	err := r.repo.PushContext(ctx, opts)
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return withRemoteLines(err, said)
}

// remoteLines collects the lines a host sends on the sideband progress
// channel, bounded, without progress meters and control characters.
type remoteLines struct {
	buf []byte
}

func (l *remoteLines) Write(p []byte) (int, error) {
	if len(l.buf) < 16<<10 {
		l.buf = append(l.buf, p[:min(len(p), 16<<10-len(l.buf))]...)
	}
	return len(p), nil
}

func (l *remoteLines) lines() []string {
	var out []string
	for _, line := range strings.Split(string(l.buf), "\n") {
		if i := strings.LastIndexByte(line, '\r'); i >= 0 {
			line = line[i+1:] // a progress meter redraws its line
		}
		line = strings.TrimSpace(strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return -1
			}
			return r
		}, line))
		if line == "" || isProgress(line) {
			continue
		}
		if len(out) == maxRemoteLines {
			out = append(out, "…")
			break
		}
		out = append(out, line)
	}
	return out
}

// isProgress reports whether a sideband line is git's own progress output,
// not a message from the host.
func isProgress(line string) bool {
	for _, p := range []string{"Resolving deltas:", "Counting objects:", "Compressing objects:", "Writing objects:", "Total "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// remoteError is a failed push with what the host said about it.
type remoteError struct {
	err   error
	lines []string
}

func (e *remoteError) Error() string {
	return e.err.Error() + "\nremote: " + strings.Join(e.lines, "\nremote: ")
}

func (e *remoteError) Unwrap() error { return e.err }

// isRejected reports whether a push failed because the remote branch moved.
// go-git has no sentinel for this (see DEPS.md): its client-side check says
// "non-fast-forward update", and a server that loses a race reports the
// receive-pack status ("failed to update ref", "cannot lock ref", "fetch
// first", ...); in an atomic push (pushSealed) git-receive-pack says only
// "atomic transaction failed" for every ref when the ref transaction lost
// that race (a hook's refusal says "hook declined" and "atomic push
// failure" instead). What the host said besides (remoteError) is not
// looked at: a hook's message is free text.
func isRejected(err error) bool {
	var re *remoteError
	if errors.As(err, &re) {
		err = re.err
	}
	msg := err.Error()
	for _, s := range []string{
		"non-fast-forward", "fetch first", "failed to update ref", "cannot lock ref",
		"failed to lock", "stale info", "incorrect old value", "already exists", "atomic transaction failed",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
