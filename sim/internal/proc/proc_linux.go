package proc

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

const parentDeathSignalSupported = true

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
}

// killChild kills the process group of pid, a child of this process, and
// waits up to timeout until this process has reaped it (its pid is gone, or
// another's): a child not reaped when this process exits would take its CPU
// time out of this process's children's.
func killChild(pid int, timeout time.Duration) error {
	if running, ppid := childState(pid); !running || ppid != os.Getpid() {
		return fmt.Errorf("process %d is not a running child of this process", pid)
	}
	signalGroup(pid, syscall.SIGKILL)
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	deadline := time.After(timeout)
	for {
		if st, ok := stat(pid); !ok || st.PPID != os.Getpid() {
			return nil
		}
		select {
		case <-poll.C:
		case <-deadline:
			return fmt.Errorf("process %d not reaped %s after SIGKILL", pid, timeout)
		}
	}
}

// childState reads /proc/PID/stat: whether the process is there and has not
// exited (a zombie has), and its parent's pid.
func childState(pid int) (running bool, ppid int) {
	st, ok := stat(pid)
	return ok && st.State != "Z" && st.State != "X", st.PPID
}

// stat reads /proc/PID/stat; false when there is no such process.
func stat(pid int) (CPU, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return CPU{}, false
	}
	return parseStat(string(b))
}
