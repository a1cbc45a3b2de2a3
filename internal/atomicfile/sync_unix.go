//go:build unix

package atomicfile

// ignoreDirSyncError reports whether a failed fsync of a directory may be
// ignored: on Unix it never may.
func ignoreDirSyncError(error) bool { return false }
