// Command soak compares the verdicts of several runs of one corpus (make
// soak): it reads report.json of each run directory given, in order, and
// prints every scenario whose verdict (passed, failed, skipped) was not the
// same in all of them, with the runs where it differed and the failure.
// Exit status: 0 no verdict changed, 1 one did (or a run left no report),
// 2 usage.
//
//	go run ./hack/soak reports/soak/1 reports/soak/2 ...
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/trainersim/trainersim/results"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: soak RUN_DIR...")
		os.Exit(2)
	}
	changed, err := compare(os.Stdout, os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		os.Exit(1)
	}
	if changed > 0 {
		os.Exit(1)
	}
}

// verdict of one scenario in one run.
type verdict struct {
	run     int
	outcome string // passed, failed or skipped
	failure string
}

// compare reads the runs' reports and prints the verdicts that changed;
// it returns how many scenarios' did.
func compare(out io.Writer, dirs []string) (int, error) {
	var names []string
	byName := map[string][]verdict{}
	for i, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			return 0, fmt.Errorf("run %d left no report: %w", i+1, err)
		}
		var run results.Run
		if err := json.Unmarshal(data, &run); err != nil {
			return 0, fmt.Errorf("run %d: %s: %w", i+1, dir, err)
		}
		if run.Interrupted || run.Unfinished {
			return 0, fmt.Errorf("run %d (%s) did not finish", i+1, dir)
		}
		for _, sc := range run.Scenarios {
			v := verdict{run: i + 1, outcome: "passed"}
			switch {
			case sc.Skipped != "":
				v.outcome = "skipped"
			case !sc.Passed:
				v.outcome, v.failure = "failed", sc.Failure
			}
			if _, seen := byName[sc.Name]; !seen {
				names = append(names, sc.Name)
			}
			byName[sc.Name] = append(byName[sc.Name], v)
		}
	}
	changed := 0
	for _, name := range names {
		vs := byName[name]
		counts := map[string]int{}
		for _, v := range vs {
			counts[v.outcome]++
		}
		if len(counts) == 1 && len(vs) == len(dirs) {
			continue
		}
		changed++
		var parts []string
		for _, o := range []string{"passed", "failed", "skipped"} {
			if counts[o] > 0 {
				parts = append(parts, fmt.Sprintf("%s in %d", o, counts[o]))
			}
		}
		if missing := len(dirs) - len(vs); missing > 0 {
			parts = append(parts, fmt.Sprintf("missing from %d", missing))
		}
		fmt.Fprintf(out, "CHANGED  %s: %s of %d runs\n", name, strings.Join(parts, ", "), len(dirs))
		for _, v := range vs {
			if v.outcome == "failed" {
				fmt.Fprintf(out, "         run %d: %s\n", v.run, results.FirstLine(v.failure))
			}
		}
	}
	if changed == 0 {
		fmt.Fprintf(out, "soak: no verdict changed over %d runs of %d scenarios\n", len(dirs), len(names))
	} else {
		fmt.Fprintf(out, "soak: %d of %d scenarios changed verdict over %d runs\n", changed, len(names), len(dirs))
	}
	return changed, nil
}
