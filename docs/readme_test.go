package docs_test

import (
	"os"
	"strings"
	"testing"
)

// readmeMaxLines is how long the README may be: what it is, what runs, the
// quick start, a first scenario, where to read on. Detail goes to docs/.
const readmeMaxLines = 150

// TestReadmeIsShort: the README stays at most readmeMaxLines lines.
func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move the detail into docs/", n, readmeMaxLines)
	}
}

// TestReadmeFirstScenario: the README's first scenario is the corpus's
// file, whole, so what a reader copies is what make run passes.
func TestReadmeFirstScenario(t *testing.T) {
	const path = "scenarios/examples/first-scenario.yaml"
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("../" + path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "]("+path+")")
	if !ok {
		t.Fatalf("README.md does not link %s", path)
	}
	_, block, ok := strings.Cut(after, "```yaml\n")
	if !ok {
		t.Fatalf("README.md has no yaml block after its link to %s", path)
	}
	block, _, _ = strings.Cut(block, "```\n")
	if block != string(file) {
		t.Errorf("README.md's first scenario is not %s as it is: copy the file into the block", path)
	}
}
