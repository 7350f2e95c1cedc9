package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const testTimeout = 10 * time.Second

// TestStopEndsTheProcessGroup: Stop (SIGTERM) and Kill (SIGKILL) end the
// process and what it started in its group; Kill ends one that ignores
// SIGTERM; a second call does nothing.
func TestStopEndsTheProcessGroup(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shell    string
		stop     func(*Process)
		exitedBy string
	}{
		{"Stop", "", func(p *Process) { _ = p.Stop(testTimeout) }, "signal: terminated"},
		{"Kill", "trap '' TERM; ", (*Process).Kill, "signal: killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// The shell starts a grandchild in the same process group; both must end.
			p := &Process{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", tc.shell + "sleep 300 & echo $! > " + filepath.Join(dir, "grandchild") + "; wait"}, LogPath: filepath.Join(dir, "log")}
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			grandchild := waitForPidFile(t, filepath.Join(dir, "grandchild"))
			tc.stop(p)
			select {
			case <-p.Exited():
			default:
				t.Fatalf("process still running after %s", tc.name)
			}
			if p.waitErr == nil || p.waitErr.Error() != tc.exitedBy {
				t.Errorf("the process exited with %v, want %s", p.waitErr, tc.exitedBy)
			}
			waitGone(t, grandchild)
			tc.stop(p)
		})
	}
}

func TestWaitUntilReportsAnEarlyExitWithTheLog(t *testing.T) {
	p := &Process{Name: "crasher", Path: "/bin/sh", Args: []string{"-c", "echo boom: bad flag; exit 3"}, LogPath: filepath.Join(t.TempDir(), "log")}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	err := p.WaitUntil(ctx, 10*time.Millisecond, func(context.Context) error { return errors.New("not yet") })
	if err == nil {
		t.Fatal("WaitUntil returned nil for a process that exited")
	}
	for _, want := range []string{"crasher exited", "exit status 3", "boom: bad flag"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestWaitUntilTimesOutWithTheLastCheck(t *testing.T) {
	p := &Process{Name: "idle", Path: "/bin/sleep", Args: []string{"300"}}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(testTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := p.WaitUntil(ctx, 10*time.Millisecond, func(context.Context) error { return errors.New("healthz 500") })
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "healthz 500") {
		t.Errorf("got %v, want a deadline error naming the last check", err)
	}
}

// startParent starts a shell that, once the file ready exists, starts the
// wrapper of target as a background child, writes the child's pid to
// childFile and then runs tail (for example "wait", or nothing to exit at
// once). The wrapper is written for the shell's pid before ready is made.
func startParent(t *testing.T, dir, target, childFile, tail string) *exec.Cmd {
	t.Helper()
	ready := filepath.Join(dir, "ready")
	_ = os.Remove(ready)
	wrapper := filepath.Join(dir, "wrapped")
	parent := exec.Command("/bin/sh", "-c", "while [ ! -e "+ready+" ]; do sleep 0.01; done; "+wrapper+" 300 & echo $! > "+childFile+"; "+tail)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	if _, protected, err := writeWrapper(dir, "wrapped", target, parent.Process.Pid); err != nil || !protected {
		t.Fatalf("wrapper: protected=%v err=%v", protected, err)
	}
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return parent
}

func needSetpriv(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil || !parentDeathSignalSupported {
		t.Fatal("setpriv(1) from util-linux is needed for kube-apiserver and etcd to die with the harness")
	}
}

// TestParentDeathSignal kills a parent with SIGKILL and checks that its
// child, started through the wrapper, dies with it.
func TestParentDeathSignal(t *testing.T) {
	needSetpriv(t)
	dir := t.TempDir()
	parent := startParent(t, dir, "/bin/sleep", filepath.Join(dir, "child"), "wait")
	child := waitForPidFile(t, filepath.Join(dir, "child"))
	// The wrapper ends by exec'ing the target: once the child's executable
	// is sleep, the signal is armed and the parent checked.
	waitForExe(t, child, "/bin/sleep")
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	waitGone(t, child)
}

// TestParentDeathBeforeTheSignalIsArmed has the parent exit right after it
// starts the wrapped child, most often before setpriv has armed the signal:
// the child must not outlive it either way.
func TestParentDeathBeforeTheSignalIsArmed(t *testing.T) {
	needSetpriv(t)
	dir := t.TempDir()
	for i := range 20 {
		childFile := filepath.Join(dir, "child-"+strconv.Itoa(i))
		parent := startParent(t, dir, "/bin/sleep", childFile, "")
		if err := parent.Wait(); err != nil {
			t.Fatal(err)
		}
		waitGone(t, waitForPidFile(t, childFile))
	}
}

func waitForPidFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// waitForExe waits until pid's executable is path.
func waitForExe(t *testing.T, pid int, path string) {
	t.Helper()
	want, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && exe == want {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("process %d never ran %s", pid, want)
}

// waitGone waits until pid no longer runs (a zombie counts as gone).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(fields) > 0 && fields[0] == "Z" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still runs", pid)
}

// TestGarbageCollectorSetting: a process the harness starts, directly or
// through the parent-death wrapper, runs with GC's setting, and with the
// harness's own where its environment sets one.
func TestGarbageCollectorSetting(t *testing.T) {
	t.Setenv("GOGC", "150") // set by the user: kept
	if limit, set := os.LookupEnv("GOMEMLIMIT"); set {
		t.Cleanup(func() { os.Setenv("GOMEMLIMIT", limit) })
		os.Unsetenv("GOMEMLIMIT")
	}
	want := fmt.Sprintf("150 %d", MemoryLimit())
	dir := t.TempDir()
	echo := []string{"-c", `echo "$GOGC $GOMEMLIMIT"`}

	log := filepath.Join(dir, "direct.log")
	p := &Process{Name: "sh", Path: "/bin/sh", Args: echo, LogPath: log}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if got, _ := os.ReadFile(log); strings.TrimSpace(string(got)) != want {
		t.Errorf("a process started: GOGC and GOMEMLIMIT %q, want %q", strings.TrimSpace(string(got)), want)
	}

	wrapper, _, err := WrapWithParentDeathSignal(dir, "wrapped-sh", "/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(wrapper, echo...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("a wrapped process: GOGC and GOMEMLIMIT %q, want %q", got, want)
	}
}

// TestMemoryLimit: the soft limit is an eighth of the machine's memory, at
// least 1 GiB.
func TestMemoryLimit(t *testing.T) {
	const machine = "MemTotal:       24624592 kB\nMemFree:        1000 kB\n" // 23.5 GiB
	for _, tc := range []struct {
		meminfo string
		cgroups []string
		want    int64
	}{
		{machine, nil, 24624592 << 10 / 8},
		{"MemFree:        1000 kB\nMemTotal:        4000000 kB\n", nil, 1 << 30},
		{"MemFree:        1000 kB\n", nil, 1 << 30},
		{"MemTotal: lots\n", nil, 1 << 30},
		{machine, []string{"max\n"}, 24624592 << 10 / 8},                 // cgroup v2, no limit
		{machine, []string{"9223372036854771712\n"}, 24624592 << 10 / 8}, // cgroup v1, no limit
		{machine, []string{"17179869184\n"}, 2 << 30},                    // a 16 GiB container
		{"", []string{"17179869184\n"}, 2 << 30},
	} {
		if got := limitFor(tc.meminfo, tc.cgroups...); got != tc.want {
			t.Errorf("limit of %q with cgroup %q = %d, want %d", tc.meminfo, tc.cgroups, got, tc.want)
		}
	}
	if got := MemoryLimit(); got < 1<<30 {
		t.Errorf("MemoryLimit() = %d, under 1 GiB", got)
	}
}

// TestParseStat: a command name with spaces and parentheses is read whole,
// and the times after it are user plus system, in seconds.
func TestParseStat(t *testing.T) {
	c, ok := parseStat("4242 (my (odd) cmd) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0")
	if !ok || c.Comm != "my (odd) cmd" || c.State != "S" || c.PPID != 17 || c.Seconds != 3 {
		t.Errorf("parsed %+v, %v; want comm %q, state S, ppid 17, 3 s", c, ok, "my (odd) cmd")
	}
	if _, ok := parseStat("garbage"); ok {
		t.Error("a line without a command name parsed")
	}
	self, err := CPUTimes()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := self[os.Getpid()]; !ok {
		t.Error("CPUTimes left out this process")
	}
}
