package checkout

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestUpward: the working directory and its parents come first, nearest
// first, then the executable's directory and its parents, each once.
func TestUpward(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	dirs := Upward()
	if len(dirs) < 2 || dirs[0] != wd || dirs[1] != filepath.Dir(wd) {
		t.Errorf("Upward() starts %v, want %s and its parent", dirs[:min(2, len(dirs))], wd)
	}
	for _, d := range []string{filepath.Dir(exe), filepath.Dir(filepath.Dir(exe))} {
		if !slices.Contains(dirs, d) {
			t.Errorf("Upward() = %v: no %s, the executable's directory or its parent", dirs, d)
		}
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] {
			t.Errorf("Upward() has %s twice", d)
		}
		seen[d] = true
	}
}
