package envtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/internal/proc"
)

// TestKillControlPlane: the processes envtest starts through the work
// directory's wrappers (here sleeps in their place, started in a group of
// their own and waited for, as envtest does) are killed, and one whose
// wrapper never ran is left to envtest's own stop.
func TestKillControlPlane(t *testing.T) {
	e := &Environment{WorkDir: t.TempDir()}
	bin := filepath.Join(e.WorkDir, "bin")
	start := func(name string) <-chan error {
		t.Helper()
		wrapper, _, err := proc.WrapWithParentDeathSignal(bin, name, "/bin/sleep")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(wrapper, "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Whatever the test finds, the stand-in does not outlive it.
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		return waited
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	apiServer := start(assets.APIServer)
	// The wrapper writes its pid as it starts: wait for it as Start waits
	// for the API server to answer.
	waitForFile(t, filepath.Join(bin, assets.APIServer+".pid"))
	apiServerLeft, etcdLeft := e.killControlPlane()
	if apiServerLeft || !etcdLeft {
		t.Errorf("left: kube-apiserver %t, etcd %t; want etcd only (its wrapper never ran)", apiServerLeft, etcdLeft)
	}
	if err := exited(apiServer); err == nil || err.Error() != "signal: killed" {
		t.Errorf("kube-apiserver's stand-in: %v, want signal: killed", err)
	}

	etcd := start(assets.Etcd)
	waitForFile(t, filepath.Join(bin, assets.Etcd+".pid"))
	apiServerLeft, etcdLeft = e.killControlPlane()
	if !apiServerLeft || etcdLeft {
		t.Errorf("left: kube-apiserver %t, etcd %t; want kube-apiserver only (it exited before)", apiServerLeft, etcdLeft)
	}
	if err := exited(etcd); err == nil || err.Error() != "signal: killed" {
		t.Errorf("etcd's stand-in: %v, want signal: killed", err)
	}
}

// waitForFile waits, at most 10 s, until path holds a line.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(path)
		return err == nil && len(b) > 0 && b[len(b)-1] == '\n', nil
	})
	if err != nil {
		t.Fatalf("no line in %s: %v", path, err)
	}
}

// exited is how a stand-in exited, or an error saying it still runs 10 s
// on.
func exited(waited <-chan error) error {
	select {
	case err := <-waited:
		return err
	case <-time.After(10 * time.Second):
		return errors.New("still running")
	}
}
