//go:build !unix

package secretbox

import "io/fs"

// checkKeyFileMode accepts any mode: outside unix, permission bits do not
// describe who can read a file (Windows uses ACLs, and files under the user's
// profile are private to the user by default).
func checkKeyFileMode(string, fs.FileMode) error { return nil }

// syncDir is a no-op: directories cannot be fsynced on Windows, and NTFS
// journals the directory entry.
func syncDir(string) error { return nil }
