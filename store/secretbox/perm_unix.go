//go:build unix

package secretbox

import (
	"fmt"
	"io/fs"
	"os"
)

// checkKeyFileMode refuses a key file that group or others may access: the
// key would no longer be the owner's alone.
func checkKeyFileMode(path string, mode fs.FileMode) error {
	if perm := mode.Perm(); perm&0o077 != 0 {
		return fmt.Errorf("secretbox: key file %s has mode %#o; it must be accessible by its owner only (chmod 600 %s)", path, perm, path)
	}
	return nil
}

// syncDir makes a newly created file's directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
