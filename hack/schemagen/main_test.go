package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGeneratedFilesAreUpToDate fails when the types or their comments
// changed without go run ./hack/schemagen.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	var out bytes.Buffer
	if err := run(true, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
}

func TestClean(t *testing.T) {
	got := clean("Writes each run in their own goroutine,\nreleased together.\n+optional\n\nSecond paragraph.\n")
	want := "Writes each run in their own goroutine, released together.\n\nSecond paragraph."
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("clean mismatch (-want +got):\n%s", diff)
	}
}

// TestGenerateIsDeterministic generates twice and compares.
func TestGenerateIsDeterministic(t *testing.T) {
	root, err := findRoot()
	if err != nil {
		t.Fatal(err)
	}
	a, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for path := range a {
		if !bytes.Equal(a[path], b[path]) {
			t.Errorf("%s differs between two runs", path)
		}
		if !bytes.HasSuffix(a[path], []byte("\n")) {
			t.Errorf("%s does not end with a newline", path)
		}
	}
}
