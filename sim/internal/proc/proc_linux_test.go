package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestKillWrapped: the wrapper writes its pid, and KillWrapped ends the
// process it started (here started as envtest does, in a group of its
// own) and returns once it is reaped; a process that is no child of the
// harness's, or no longer runs, is not signalled.
func TestKillWrapped(t *testing.T) {
	dir := t.TempDir()
	wrapper, _, err := WrapWithParentDeathSignal(dir, "wrapped-sleep", "/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(wrapper, "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if pid := waitForPidFile(t, wrapper+pidSuffix); pid != cmd.Process.Pid {
		t.Fatalf("the wrapper wrote pid %d, the process is %d", pid, cmd.Process.Pid)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }() // as envtest waits for its processes
	if err := KillWrapped(wrapper, testTimeout); err != nil {
		t.Fatal(err)
	}
	if _, there := stat(cmd.Process.Pid); there {
		t.Error("KillWrapped returned before the process was reaped")
	}
	if err := <-waited; err == nil || err.Error() != "signal: killed" {
		t.Errorf("the process exited with %v, want signal: killed", err)
	}
	if err := KillWrapped(wrapper, testTimeout); err == nil || !strings.Contains(err.Error(), "not a running child") {
		t.Errorf("KillWrapped of a process that exited: %v, want not a running child", err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other+pidSuffix, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := KillWrapped(other, testTimeout); err == nil || !strings.Contains(err.Error(), "process 1 is not a running child") {
		t.Errorf("KillWrapped of pid 1: %v, want not a running child", err)
	}
	if err := KillWrapped(filepath.Join(dir, "never-started"), testTimeout); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("KillWrapped without a pid file: %v, want not exist", err)
	}
}
