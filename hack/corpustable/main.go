// Command corpustable writes the table of the scenario corpus into docs/corpus.md,
// between its markers, from the scenario files themselves: folder, scenario,
// the first sentence of its description, its source and, for scenarios that
// pin today's upstream behaviour, the upstream issue.
//
//	go run ./hack/corpustable          # rewrite the table
//	go run ./hack/corpustable -check   # exit 1 if docs/corpus.md is out of date
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trainersim/trainersim/sim/scenario"
)

const (
	// pagePath is the page the table is generated into.
	pagePath  = "docs/corpus.md"
	corpusDir = "scenarios"
	begin     = "<!-- BEGIN GENERATED: corpus table (go run ./hack/corpustable) -->\n"
	end       = "<!-- END GENERATED: corpus table -->\n"
	// SourceAnnotation names the upstream doc section, issue or PR a scenario
	// comes from.
	sourceAnnotation = "trainersim.dev/source"
	// upstreamBugLabel carries the upstream issue or PR number of a scenario
	// that asserts today's buggy behaviour.
	upstreamBugLabel = "upstream-bug"
	// docsDifferLabel marks a scenario that asserts what a release does
	// where its user guide says otherwise.
	docsDifferLabel = "docs-differ"
)

func main() {
	check := flag.Bool("check", false, "exit 1 if docs/corpus.md differs from what would be written")
	flag.Parse()
	if err := run(*check); err != nil {
		fmt.Fprintln(os.Stderr, "corpustable:", err)
		os.Exit(1)
	}
}

func run(check bool) error {
	files, err := scenario.LoadPaths([]string{corpusDir}, scenario.Options{})
	if err != nil {
		return fmt.Errorf("failed to load the corpus:\n%w", err)
	}
	page, err := os.ReadFile(pagePath)
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", pagePath, err)
	}
	out, err := splice(page, table(files))
	if err != nil {
		return err
	}
	if bytes.Equal(out, page) {
		return nil
	}
	if check {
		return fmt.Errorf("%s: the corpus table is out of date: run 'make generate'", pagePath)
	}
	return os.WriteFile(pagePath, out, 0o644)
}

// table renders the corpus as a Markdown table, in file order.
func table(files []*scenario.File) []byte {
	var b bytes.Buffer
	bugs, differ := 0, 0
	for _, f := range files {
		if f.Scenario.Metadata.Labels[upstreamBugLabel] != "" {
			bugs++
		}
		if f.Scenario.Metadata.Labels[docsDifferLabel] != "" {
			differ++
		}
	}
	fmt.Fprintf(&b, "%d scenarios; %d pin today's upstream behaviour where it is a bug or a gap (label `%s`); %d assert what a release does where its guide says otherwise (label `%s`).\n\n",
		len(files), bugs, upstreamBugLabel, differ, docsDifferLabel)
	b.WriteString("| folder | scenario | Trainer | what it shows | source |\n|---|---|---|---|---|\n")
	for _, f := range files {
		sc := f.Scenario
		folder := filepath.ToSlash(filepath.Dir(strings.TrimPrefix(filepath.ToSlash(f.Path), corpusDir+"/")))
		source := sc.Metadata.Annotations[sourceAnnotation]
		if n := sc.Metadata.Labels[upstreamBugLabel]; n != "" {
			source += fmt.Sprintf(" (upstream-bug #%s)", n)
		}
		if sc.Metadata.Labels[docsDifferLabel] != "" {
			source += " (docs-differ)"
		}
		releases := "all"
		if t := sc.Spec.Trainer; t != nil {
			releases = "`" + t.Versions + "`"
		}
		fmt.Fprintf(&b, "| `%s` | [%s](../%s) | %s | %s | %s |\n", folder, sc.Metadata.Name, filepath.ToSlash(f.Path), cell(releases), cell(firstSentence(sc.Spec.Description)), cell(source))
	}
	return b.Bytes()
}

// firstSentence is the description up to its first full stop followed by a
// space or the end, on one line.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for i := 0; i < len(s); i++ {
		if s[i] == '.' && (i == len(s)-1 || s[i+1] == ' ') {
			return s[:i+1]
		}
	}
	return s
}

func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

func splice(page, body []byte) ([]byte, error) {
	i := bytes.Index(page, []byte(begin))
	j := bytes.Index(page, []byte(end))
	if i < 0 || j < i {
		return nil, fmt.Errorf("%s lacks the markers %q and %q", pagePath, strings.TrimSpace(begin), strings.TrimSpace(end))
	}
	var out bytes.Buffer
	out.Write(page[:i+len(begin)])
	out.Write(body)
	out.Write(page[j:])
	return out.Bytes(), nil
}
