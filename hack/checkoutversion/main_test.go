package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo builds, in a temporary directory, the shape of the Trainer's
// history: releases tagged on release branches, never on the main branch,
// and an old release tagged on the main branch.
//
//	master: m1 (v1.5.0) - m2 - F22 - m3 - F23 - m4
//	release-2.2 from F22: r1 (v2.2.0) - r2 (v2.2.1) - r3
//	release-2.3 from F23: s1 (v2.3.0-rc.0) - s2 (v2.3.0)
//
// Every commit is also tagged at-<name>. It returns a function that
// checks out a ref in it.
func repo(t *testing.T) (string, func(ref string)) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_COMMITTER_DATE=2026-11-26T06:17:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	commit := func(name string, tags ...string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "file"), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		run("add", "file")
		run("commit", "-q", "-m", name)
		for _, tag := range append(tags, "at-"+name) {
			run("tag", tag)
		}
	}
	run("init", "-q", "-b", "master")
	commit("m1", "v1.5.0")
	commit("m2")
	commit("F22")
	commit("m3")
	commit("F23")
	commit("m4")
	run("checkout", "-q", "-b", "release-2.2", "at-F22")
	commit("r1", "v2.2.0")
	commit("r2", "v2.2.1")
	commit("r3")
	run("checkout", "-q", "-b", "release-2.3", "at-F23")
	commit("s1", "v2.3.0-rc.0")
	commit("s2", "v2.3.0")
	return dir, func(ref string) { run("checkout", "-q", ref) }
}

// TestNearestRelease: a main-branch commit descends from the newest release
// branched before it, a release-branch commit from its branch's last
// release, a tagged commit is its release; release candidates are not
// releases.
func TestNearestRelease(t *testing.T) {
	dir, checkout := repo(t)
	for _, tc := range []struct {
		ref   string
		base  string
		exact bool
	}{
		{"master", "v2.3.0", false},
		{"release-2.2", "v2.2.1", false},
		{"v2.2.1", "v2.2.1", true},
		{"release-2.3", "v2.3.0", true},
		{"v2.3.0-rc.0", "v2.2.1", false},
		{"at-F23", "v2.2.1", false},
		{"at-m3", "v2.2.1", false},
		{"at-m2", "v1.5.0", false},
		{"v1.5.0", "v1.5.0", true},
	} {
		checkout(tc.ref)
		c, err := find(dir)
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		if c.base != tc.base || c.exact != tc.exact || c.from != "git-tags" {
			t.Errorf("%s: base %q exact %v from %q, want %q exact %v from git-tags", tc.ref, c.base, c.exact, c.from, tc.base, tc.exact)
		}
		if len(c.commit) != 12 || c.time != "20261126061700" || c.describe == "" {
			t.Errorf("%s: commit %q time %q describe %q", tc.ref, c.commit, c.time, c.describe)
		}
	}
}

// TestDirtyTagIsNotTheRelease: the tagged commit with a change in the tree
// is newer than its release.
func TestDirtyTagIsNotTheRelease(t *testing.T) {
	dir, checkout := repo(t)
	checkout("v2.3.0")
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := find(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.base != "v2.3.0" || c.exact || !strings.HasSuffix(c.describe, "-dirty") {
		t.Errorf("base %q exact %v describe %q, want v2.3.0, not exact, -dirty", c.base, c.exact, c.describe)
	}
}

// TestModuleVersion: a directory that is no git checkout of its own takes
// the release from a module version in its path, else has none.
func TestModuleVersion(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct{ path, base string }{
		{"github.com/kubeflow/trainer/v2@v2.3.0", "v2.3.0"},
		{"sigs.k8s.io/kueue@v0.19.1", "v0.19.1"},
		{"github.com/kubeflow/trainer/v2@v2.3.1-0.20260101000000-0123456789ab", "v2.3.0"},
		{"github.com/kubeflow/trainer/v2@v2.3.0-rc.1", ""},
		{"trainer", ""},
	} {
		dir := filepath.Join(root, tc.path)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		c, err := find(dir)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		wantFrom := "module-version"
		if tc.base == "" {
			wantFrom = ""
		}
		if c.base != tc.base || c.from != wantFrom || c.commit != "" {
			t.Errorf("%s: base %q from %q commit %q, want %q from %q", tc.path, c.base, c.from, c.commit, tc.base, wantFrom)
		}
	}
}

// TestEncode: the form sim/releases parses.
func TestEncode(t *testing.T) {
	c := checkout{dir: "/src/trainer", describe: "v2.3.0-2-gabc", commit: "0123456789ab", time: "20261126061700", base: "v2.3.0", from: "git-tags"}
	want := "dir=/src/trainer;describe=v2.3.0-2-gabc;commit=0123456789ab;time=20261126061700;base=v2.3.0;from=git-tags;exact=false"
	if got := c.encode(); got != want {
		t.Errorf("encode() = %q, want %q", got, want)
	}
}
