package startup

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
	RemoveStaleWorkDirs(root)
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
