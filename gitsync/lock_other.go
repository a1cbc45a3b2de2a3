//go:build !unix

package gitsync

import "os"

func tryLock(*os.File) (bool, error) { return false, errLockUnsupported }
