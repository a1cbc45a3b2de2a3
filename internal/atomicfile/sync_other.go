//go:build !unix

package atomicfile

// ignoreDirSyncError reports whether a failed fsync of a directory may be
// ignored: Windows cannot sync a directory handle, and its renames are
// journaled by NTFS.
func ignoreDirSyncError(error) bool { return true }
