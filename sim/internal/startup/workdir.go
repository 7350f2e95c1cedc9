package startup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const (
	// workDirPattern names the temporary work directories Start creates.
	workDirPattern = "trainersim-*"
	// ownerFile in a work directory holds the pid of the process using it.
	ownerFile = "owner.pid"
)

// NewWorkDir creates a temporary work directory owned by this process, after
// removing those left by harness processes that were killed (SIGKILL gives a
// process no chance to clean up; its children die with it, its files stay).
func NewWorkDir() (string, error) {
	RemoveStaleWorkDirs(os.TempDir())
	dir, err := os.MkdirTemp("", workDirPattern)
	if err != nil {
		return "", fmt.Errorf("failed to create work dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return "", fmt.Errorf("failed to write work dir owner: %w", err)
	}
	return dir, nil
}

// RemoveStaleWorkDirs removes the work directories under root whose owner
// process no longer runs. Directories without an owner file are left alone:
// they may belong to a harness that is creating its own right now.
func RemoveStaleWorkDirs(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, workDirPattern))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || ProcessRunning(pid) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// ProcessRunning reports whether a process with this pid exists.
func ProcessRunning(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
