//go:build !linux

package proc

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// Without Linux's parent-death signal a child outlives a harness killed with
// SIGKILL; Stop still ends it on every normal exit path.
const parentDeathSignalSupported = false

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func signalGroup(pid int, sig syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Signal(sig)
	}
}

// killChild needs /proc: elsewhere the caller stops the process as it
// otherwise would.
func killChild(pid int, _ time.Duration) error {
	return fmt.Errorf("cannot tell whether process %d is a child of this process without /proc", pid)
}
