package envtest

import (
	"os"
	"path/filepath"
	"testing"
)

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
