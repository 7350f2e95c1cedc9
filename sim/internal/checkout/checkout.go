// Package checkout finds the trainersim checkout a program belongs to: the
// directories where its bin/ and fixtures/ may be.
package checkout

import (
	"os"
	"path/filepath"
	"slices"
)

// Upward returns the working directory and each of its parents, nearest
// first (a test in a sub-package finds the checkout it runs in), then the
// directory of the running executable and each of its parents (bin/simctl
// run from outside the checkout finds the checkout it was built in), each
// once.
func Upward() []string {
	var dirs []string
	add := func(from string) {
		for dir := from; ; dir = filepath.Dir(dir) {
			if !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
			if filepath.Dir(dir) == dir {
				return
			}
		}
	}
	if wd, err := os.Getwd(); err == nil {
		add(wd)
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		add(filepath.Dir(exe))
	}
	return dirs
}
