//go:build unix

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// userTag names the current user in the default directory.
func userTag() string { return strconv.Itoa(os.Getuid()) }

// checkSharedTempDir refuses a directory under the shared temporary directory
// that another user owns or that others may write: whoever created it first
// would otherwise receive (or swap, through a symbolic link) the agent's data.
func checkSharedTempDir(dir string) error {
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		return nil // no usable temporary directory: nothing shared to protect against
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(abs+string(filepath.Separator), filepath.Clean(tmp)+string(filepath.Separator)) &&
		!strings.HasPrefix(abs+string(filepath.Separator), filepath.Clean(os.TempDir())+string(filepath.Separator)) {
		return nil
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("directory %s in the shared temporary directory is a symbolic link; set %s", abs, EnvDataDir)
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("directory %s in the shared temporary directory belongs to another user; set %s", abs, EnvDataDir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("directory %s in the shared temporary directory is writable by others; set %s", abs, EnvDataDir)
	}
	return nil
}
