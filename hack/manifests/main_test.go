package main

import "testing"

// TestModuleAndPath: a generated file's header names the module directory
// the same way whatever the module cache's place, so that make verify
// agrees on every machine.
func TestModuleAndPath(t *testing.T) {
	const want = "sigs.k8s.io/kwok@v0.8.0/kustomize/kwok"
	t.Setenv("GOMODCACHE", "")
	if got := moduleAndPath("/root/go/pkg/mod/" + want); got != want {
		t.Errorf("default cache: %q, want %q", got, want)
	}
	t.Setenv("GOMODCACHE", "/tmp/cold/gomod/")
	if got := moduleAndPath("/tmp/cold/gomod/" + want); got != want {
		t.Errorf("GOMODCACHE=/tmp/cold/gomod/: %q, want %q", got, want)
	}
}
