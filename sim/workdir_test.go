package sim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestRemoveStaleWorkDirs(t *testing.T) {
	root := t.TempDir()
	// A pid that has certainly exited: a child we started and waited for.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("failed to run true: %v", err)
	}
	dead := cmd.Process.Pid
	dirs := map[string]string{
		"trainersim-dead":     strconv.Itoa(dead),
		"trainersim-alive":    strconv.Itoa(os.Getpid()),
		"trainersim-no-owner": "",
		"other-dead":          strconv.Itoa(dead),
	}
	for name, owner := range dirs {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(root, name, ownerFile), []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	removeStaleWorkDirs(root)
	for name, wantKept := range map[string]bool{
		"trainersim-dead":     false,
		"trainersim-alive":    true,
		"trainersim-no-owner": true,
		"other-dead":          true,
	} {
		_, err := os.Stat(filepath.Join(root, name))
		if kept := err == nil; kept != wantKept {
			t.Errorf("%s: kept=%v, want %v", name, kept, wantKept)
		}
	}
}

// TestStartRefusesUsedWorkDir: a --work-dir that holds the etcd data of an
// earlier cluster is refused with a line that names it, before anything
// starts, and the data is left alone.
func TestStartRefusesUsedWorkDir(t *testing.T) {
	dir := t.TempDir()
	member := filepath.Join(dir, "etcd", "member")
	if err := os.MkdirAll(member, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &Environment{WorkDir: dir}
	err := e.Start(t.Context())
	want := "work directory " + dir + " holds the etcd data of an earlier cluster (" + filepath.Join(dir, "etcd") + "): give a new or empty directory, or remove that one"
	if err == nil || err.Error() != want {
		t.Errorf("Start: %v, want %q", err, want)
	}
	if _, err := os.Stat(member); err != nil {
		t.Errorf("the earlier data is gone: %v", err)
	}
}

// TestFreePort: the ports freePort gives are free and below the kernel's
// ephemeral range, which outgoing connections draw from.
func TestFreePort(t *testing.T) {
	low, high := portsBelowEphemeral()
	if low < 1024 || high-low != 10000 {
		t.Fatalf("range %d-%d", low, high)
	}
	for range 20 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < low || port >= high {
			t.Errorf("port %d outside %d-%d", port, low, high)
		}
	}
}
