package e2eharness

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// EnvDir is the environment variable naming the directory logs are kept in.
const EnvDir = "GITPEER_E2E_LOGS"

// EnvKeep is the environment variable that, when set, keeps a run's whole
// temp dir (logs, repos, the control planes' PKI) for debugging.
const EnvKeep = "GITPEER_E2E_KEEP"

// Dir is the directory logs are kept in, from EnvDir; "" when unset (the
// logs then go with the temp dir, as before).
func Dir() string { return os.Getenv(EnvDir) }

// Dispose ends a suite's run in tmp once its processes are stopped: when
// the run failed and EnvDir is set, the logs under tmp are kept in
// EnvDir/suite (Keep); then tmp is removed, unless EnvKeep is set. What it
// keeps, and what goes wrong, it says on stderr after prefix ("e2e",
// "daemon e2e"). An empty tmp (set-up failed before making it) is nothing
// to do.
func Dispose(tmp, suite, prefix string, failed bool) {
	if tmp == "" {
		return
	}
	if dir := Dir(); dir != "" && failed {
		kept, err := Keep(tmp, dir, suite)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", prefix, err)
		}
		fmt.Fprintf(os.Stderr, "%s: logs kept in %s\n", prefix, kept)
	}
	if os.Getenv(EnvKeep) != "" {
		fmt.Fprintf(os.Stderr, "%s: kept %s (logs, repos, cluster PKI); processes are stopped\n", prefix, tmp)
		return
	}
	if err := os.RemoveAll(tmp); err != nil {
		fmt.Fprintf(os.Stderr, "%s: remove %s: %v\n", prefix, tmp, err)
	}
}

// Keep copies every regular file under src whose name ends in ".log" into
// dst/suite, keeping its path relative to src (clusters/alpha/logs/etcd.log
// stays apart from clusters/beta/logs/etcd.log), and returns that directory.
// A file that vanishes meanwhile is skipped; other errors are joined and
// returned after the walk, so that one unreadable file loses only itself.
func Keep(src, dst, suite string) (string, error) {
	out := filepath.Join(dst, suite)
	var errs []error
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return nil
		case !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".log"):
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if err := copyFile(p, filepath.Join(out, rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("keep logs of %s in %s: %w", src, out, err)
	}
	return out, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
