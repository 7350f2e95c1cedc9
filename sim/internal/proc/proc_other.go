//go:build !linux

package proc

import (
	"os"
	"syscall"
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
