package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	utilclock "k8s.io/utils/clock"
)

// DefaultDebounce is the quiet period Watch waits for when given none: long
// enough to fold an editor's write-temp-then-rename save into one event.
const DefaultDebounce = 150 * time.Millisecond

// Watch reports, debounced, that files under root changed, skipping any .git
// directory (so a clone's own fetches and commits are not changes). One value
// is sent after debounce has passed with no further event, or at the latest
// 10×debounce after the first one, so that a steady trickle of writes cannot
// starve the receiver. Signals coalesce: the channel holds at most one, and a
// slow receiver sees one value for many changes. It carries no detail on
// purpose: a level-triggered reconciler re-reads the whole tree anyway.
//
// fsnotify is not recursive, so Watch watches every directory and adds
// watches for directories created later; changes inside a new directory made
// before its watch exists are covered by the signal its creation already
// causes. A lost-event error from the kernel (queue overflow) is reported as
// a change too. debounce <= 0 means DefaultDebounce. The channel is closed
// when ctx ends. Watch returns an error when root cannot be watched; the
// number of directories is bounded by fs.inotify.max_user_watches on Linux.
func Watch(ctx context.Context, root string, debounce time.Duration) (<-chan struct{}, error) {
	return watch(ctx, root, debounce, utilclock.RealClock{})
}

// watch is Watch with the clock that times the debounce.
func watch(ctx context.Context, root string, debounce time.Duration, clk utilclock.Clock) (<-chan struct{}, error) {
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	if err := addTree(w, root); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer w.Close()
		// The timer is made at the first event, not stopped at once from
		// here: a clock's waiter exists only while a batch is pending.
		var (
			timer utilclock.Timer
			fired <-chan time.Time // nil (never ready) until the first event
			first time.Time        // of the pending batch; zero when none
		)
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
		arm := func() {
			now := clk.Now()
			if first.IsZero() {
				first = now
			}
			d := min(debounce, first.Add(10*debounce).Sub(now))
			if timer == nil {
				timer = clk.NewTimer(d)
				fired = timer.C()
				return
			}
			timer.Reset(d)
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if inGitDir(root, ev.Name) {
					continue
				}
				if ev.Has(fsnotify.Create) {
					// Stat the final state: editors create and rename in
					// quick succession; only a directory needs a watch.
					if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
						_ = addTree(w, ev.Name) // it may vanish meanwhile
					}
				}
				arm()
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				arm() // events may have been lost: let the receiver rescan
			case <-fired:
				first = time.Time{}
				select {
				case out <- struct{}{}:
				default: // one signal is already pending
				}
			}
		}
	}()
	return out, nil
}

// addTree watches dir and every directory below it, except .git.
func addTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != dir {
				return nil // removed while walking
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == ".git" {
			return fs.SkipDir
		}
		if err := w.Add(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}

// inGitDir reports whether name lies in a .git directory under root.
func inGitDir(root, name string) bool {
	rel, err := filepath.Rel(root, name)
	if err != nil {
		return false
	}
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if part == ".git" {
			return true
		}
	}
	return false
}
