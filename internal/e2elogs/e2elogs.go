// Package e2elogs keeps the logs of an end-to-end run (the control planes'
// etcd, kube-apiserver and kube-controller-manager, Flux's controllers, the
// reconcilers, the start-up scripts) out of the run's temp dir before that
// dir is removed, so that a failed `make e2e` leaves them where its last line
// says: the directory named by GITPEER_E2E_LOGS (the Makefile sets
// _output/e2e-logs).
package e2elogs

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

// Dir is the directory logs are kept in, from EnvDir; "" when unset (the
// logs then go with the temp dir, as before).
func Dir() string { return os.Getenv(EnvDir) }

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
