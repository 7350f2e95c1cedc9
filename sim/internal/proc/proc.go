// Package proc runs the control-plane binaries the harness starts itself
// (kube-controller-manager, kube-scheduler, kwok) as child processes that die
// with the harness, even when the harness is killed with SIGKILL.
//
// On Linux every child gets its own process group and a parent-death signal
// (SIGKILL). Processes that another library starts (envtest's kube-apiserver
// and etcd) are covered by WrapWithParentDeathSignal, which puts a small
// wrapper script in front of the real binary.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one child process. Name, Path and Args are set by the caller;
// LogPath, when set, receives the process's stdout and stderr.
type Process struct {
	// Name is the short name used in errors, for example "kube-scheduler".
	Name string
	// Path is the absolute path of the binary.
	Path string
	// Args are the command-line arguments, without the binary.
	Args []string
	// LogPath is the file that receives stdout and stderr. Empty: discarded.
	LogPath string
	// Env is added to the harness's own environment. Nil adds nothing.
	Env []string

	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	waitErr error
	stop    sync.Once
}

// Start starts the process. It returns once the process has been forked.
func (p *Process) Start() error {
	p.cmd = exec.Command(p.Path, p.Args...)
	p.cmd.SysProcAttr = sysProcAttr()
	p.cmd.Env = slices.Concat(os.Environ(), gcEnv(), p.Env)
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = io.Discard
	if p.LogPath != "" {
		f, err := os.Create(p.LogPath)
		if err != nil {
			return fmt.Errorf("failed to create log file of %s: %w", p.Name, err)
		}
		p.logFile = f
		p.cmd.Stdout = f
		p.cmd.Stderr = f
	}
	if err := p.cmd.Start(); err != nil {
		p.closeLog()
		return fmt.Errorf("failed to start %s: %w", p.Name, err)
	}
	p.done = make(chan struct{})
	go func() {
		p.waitErr = p.cmd.Wait()
		p.closeLog()
		close(p.done)
	}()
	return nil
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// ExitError describes how the process ended; valid after Exited is closed.
func (p *Process) ExitError() error {
	if p.waitErr == nil {
		return fmt.Errorf("%s exited", p.Name)
	}
	return fmt.Errorf("%s exited: %w", p.Name, p.waitErr)
}

// Stop sends SIGTERM to the process group and waits up to grace for the
// process to exit, then sends SIGKILL. It is safe to call more than once.
func (p *Process) Stop(grace time.Duration) error {
	if p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	p.stop.Do(func() {
		signalGroup(p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			signalGroup(p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return nil
}

// Kill sends SIGKILL to the process group and waits for the process to
// exit: for a process whose end nobody looks at, as a cluster's that goes
// away. It is safe to call more than once, and after Stop.
func (p *Process) Kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.stop.Do(func() {
		signalGroup(p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
}

// LogTail returns up to the last n lines of the process log, for error
// messages when a component fails to become healthy.
func (p *Process) LogTail(n int) string {
	if p.LogPath == "" {
		return ""
	}
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (p *Process) closeLog() {
	if p.logFile != nil {
		_ = p.logFile.Close()
	}
}

// WaitUntil polls check every interval until it returns nil, the context ends
// or the process exits. The error names the component and, when the process
// died, carries the tail of its log.
func (p *Process) WaitUntil(ctx context.Context, interval time.Duration, check func(context.Context) error) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become healthy: %w (last check: %v)", p.Name, ctx.Err(), last)
		case <-p.done:
			return fmt.Errorf("%w before it became healthy; last log lines:\n%s", p.ExitError(), p.LogTail(20))
		case <-ticker.C:
		}
	}
}

// GC is how the Go garbage collector of every process the harness starts
// is set (and of simctl's own, TuneGC), unless this process's environment
// sets it: a collection once the heap has grown by 400% rather than Go's
// 100%, up to a soft limit per process of an eighth of the machine's
// memory, at least 1 GiB (MemoryLimit), past which it collects sooner. On
// the corpus the cluster's processes spent 18% less CPU (71 s against 58 s
// in one run, docs/performance.md); what they do does not depend on it.
func GC() []string {
	return []string{"GOGC=400", "GOMEMLIMIT=" + strconv.FormatInt(MemoryLimit(), 10)}
}

// MemoryLimit is GC's soft memory limit, in bytes: an eighth of the
// machine's memory (MemTotal of /proc/meminfo, or the cgroup's memory
// limit when that is less), at least 1 GiB (1 GiB when neither can be read). A
// fixed limit made the collector of a process whose live heap grew toward
// it run ever more often: the API server of a 1,000-node fleet, at a 1 GiB
// limit, spent half as much CPU again per job as at 100 nodes
// (docs/performance.md); an eighth leaves a process's heap room to grow with the
// cluster while the processes of a cluster, together, stay well within
// the machine.
func MemoryLimit() int64 { return memoryLimit() }

var memoryLimit = sync.OnceValue(func() int64 {
	meminfo, _ := os.ReadFile("/proc/meminfo")
	var cgroups []string
	for _, f := range cgroupMemoryFiles {
		if data, err := os.ReadFile(f); err == nil {
			cgroups = append(cgroups, string(data))
		}
	}
	return limitFor(string(meminfo), cgroups...)
})

// cgroupMemoryFiles hold the memory limit of this process's cgroup: v2,
// then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

const minMemoryLimit = 1 << 30

// limitFor is MemoryLimit for a machine whose /proc/meminfo reads meminfo
// and whose cgroup memory limit files read cgroups: an eighth of the lower
// of MemTotal and the cgroup's limits, at least 1 GiB. v2's "max" (no
// limit) does not parse; v1's no limit is more than the machine has.
func limitFor(meminfo string, cgroups ...string) int64 {
	total := parseMemTotal(meminfo)
	for _, c := range cgroups {
		if limit, err := strconv.ParseInt(strings.TrimSpace(c), 10, 64); err == nil && limit > 0 && (total == 0 || limit < total) {
			total = limit
		}
	}
	return max(minMemoryLimit, total/8)
}

// parseMemTotal reads MemTotal, in bytes, from the text of /proc/meminfo;
// 0 when it is missing.
func parseMemTotal(meminfo string) int64 {
	for line := range strings.SplitSeq(meminfo, "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// gcEnv is GC less what this process's environment sets.
func gcEnv() []string {
	var out []string
	for _, kv := range GC() {
		name, _, _ := strings.Cut(kv, "=")
		if _, set := os.LookupEnv(name); !set {
			out = append(out, kv)
		}
	}
	return out
}

// TuneGC sets this process's garbage collector as GC sets the harness's
// processes', where its environment does not: for a program that runs the
// in-process controllers (simctl).
func TuneGC() {
	for _, kv := range gcEnv() {
		switch name, value, _ := strings.Cut(kv, "="); name {
		case "GOGC":
			if n, err := strconv.Atoi(value); err == nil {
				debug.SetGCPercent(n)
			}
		case "GOMEMLIMIT":
			debug.SetMemoryLimit(MemoryLimit())
		}
	}
}

// WrapWithParentDeathSignal writes an executable wrapper named name into dir
// that execs target with a parent-death signal of SIGKILL, so that a process
// started by code the harness does not control (envtest) still dies with the
// harness. It returns the wrapper's path. Where setpriv(1) from util-linux is
// not available the wrapper execs target directly, and the caller is told so
// by the returned bool being false. Either way the wrapper writes its pid,
// which exec keeps, to the wrapper's path with ".pid" added, for
// KillWrapped.
//
// The wrapper must be started by this process. A parent that dies after the
// fork but before setpriv has armed the signal would leave the process
// running with no signal to come: so, once armed, the wrapper checks that
// its parent is still this process, and exits if not, before it execs
// target.
func WrapWithParentDeathSignal(dir, name, target string) (string, bool, error) {
	return writeWrapper(dir, name, target, os.Getpid())
}

// writeWrapper writes the wrapper of WrapWithParentDeathSignal for a parent
// of the given pid.
func writeWrapper(dir, name, target string, parent int) (string, bool, error) {
	setpriv, err := exec.LookPath("setpriv")
	protected := err == nil && parentDeathSignalSupported
	var exports strings.Builder
	for _, kv := range gcEnv() {
		fmt.Fprintf(&exports, "export %s\n", kv)
	}
	path := filepath.Join(dir, name)
	fmt.Fprintf(&exports, "echo $$ > %q\n", path+pidSuffix)
	script := fmt.Sprintf("#!/bin/sh\n%sexec %q \"$@\"\n", exports.String(), target)
	if protected {
		script = fmt.Sprintf("#!/bin/sh\n%s"+
			"# setpriv arms the parent-death signal; the inner shell then checks\n"+
			"# that the parent (field 4 of /proc/self/stat) is still pid %d,\n"+
			"# which it is not if it died before the signal was armed.\n"+
			"exec %q --pdeathsig KILL -- /bin/sh -c %s sh %d %q \"$@\"\n",
			exports.String(), parent, setpriv, parentCheck, parent, target)
	}
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", false, fmt.Errorf("failed to write wrapper for %s: %w", name, err)
	}
	return path, protected, nil
}

// pidSuffix names the file a wrapper writes its pid to: the wrapper's path
// and this.
const pidSuffix = ".pid"

// KillWrapped sends SIGKILL to the process group of the process the wrapper
// at path (WrapWithParentDeathSignal) started, if that process is still a
// running child of this one, and waits up to timeout until it is reaped
// (whoever started it waits for it, as envtest does). The error says why it
// could not: no pid written, a process that is not a running child (it
// exited, and its pid may be another's now), or one not reaped by the
// timeout.
func KillWrapped(path string, timeout time.Duration) error {
	b, err := os.ReadFile(path + pidSuffix)
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("pid of %s: %w", path, err)
	}
	return killChild(pid, timeout)
}

// parentCheck is the inner shell of a wrapper: $1 is the pid its parent
// must have, the rest is the command to exec.
const parentCheck = `'read -r _ _ _ ppid _ < /proc/$$/stat; [ "$ppid" = "$1" ] || exit 1; shift; exec "$@"'`

// ErrNotExecutable is returned by CheckExecutable for a path that is missing
// or not an executable file.
var ErrNotExecutable = errors.New("not an executable file")

// CheckExecutable reports whether path is an executable regular file.
func CheckExecutable(path string) error {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: %w", path, ErrNotExecutable)
	}
	return nil
}
