package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// designPages may cite the commits and issues their measurements and
// decisions come from; every other page says what is true now.
var designPages = map[string]bool{
	"docs/fidelity.md":    true,
	"docs/performance.md": true,
	"docs/upstream.md":    true,
	"docs/record.md":      true, // its round trip's history
}

var (
	// commitID is a short or long commit id: 7 to 40 hex digits with a
	// letter and a digit, not part of a version, a name or a path.
	commitID = regexp.MustCompile(`(?:^|[\s(,;:'"` + "`" + `])([0-9a-f]{7,40})\b`)
	// issueNumber is this project's issue by number.
	issueNumber = regexp.MustCompile(`(?i)\bissues? [0-9]+\b`)
	// date is a day a figure was measured on (a timestamp in an example
	// output, 2026-11-22T02:31:06Z, is not one).
	date = regexp.MustCompile(`\b20[0-9]{2}-[0-9]{2}-[0-9]{2}\b`)
)

// TestNoCommitIDsOrIssueNumbers: the README and the user pages name no
// commit, no issue of this project and no day: a figure's commit and date
// are data for the benchmark log (bench/results.jsonl), and a page says
// what holds now.
func TestNoCommitIDsOrIssueNumbers(t *testing.T) {
	pages := []string{"README.md"}
	m, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m {
		pages = append(pages, strings.TrimPrefix(p, "../"))
	}
	for _, page := range pages {
		if designPages[page] {
			continue
		}
		data, err := os.ReadFile(filepath.Join("..", page))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, sm := range commitID.FindAllStringSubmatch(line, -1) {
				if id := sm[1]; strings.ContainsAny(id, "abcdef") && strings.ContainsAny(id, "0123456789") {
					t.Errorf("%s:%d: commit id %s: say what holds now; a figure's commit goes to the benchmark log", page, i+1, id)
				}
			}
			if n := issueNumber.FindString(line); n != "" {
				t.Errorf("%s:%d: %q: name what the issue brought, not its number", page, i+1, n)
			}
			if d := date.FindString(line); d != "" {
				t.Errorf("%s:%d: %s: say what holds now, and how to check it; dated figures go to the benchmark log", page, i+1, d)
			}
		}
	}
}
