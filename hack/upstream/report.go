package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

// spec is one spec of a suite's run, read from ginkgo's JSON report (the
// fields of ginkgo's types.SpecReport this command needs).
type spec struct {
	ContainerHierarchyTexts  []string
	ContainerHierarchyLabels [][]string
	LeafNodeLabels           []string
	LeafNodeType             string
	LeafNodeText             string
	State                    string
	Failure                  struct {
		Message  string
		Location struct {
			FileName   string
			LineNumber int
		}
	}
}

// FullText is ginkgo's: the containers' texts and the spec's, joined.
func (s spec) FullText() string {
	return strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText), " ")
}

// labels are the spec's own labels and its containers'.
func (s spec) labels() []string {
	labels := slices.Clone(s.LeafNodeLabels)
	for _, l := range s.ContainerHierarchyLabels {
		labels = append(labels, l...)
	}
	return labels
}

// failed reports whether the state is one of ginkgo's failure states.
func (s spec) failed() bool {
	switch s.State {
	case "failed", "aborted", "panicked", "interrupted", "timedout":
		return true
	}
	return false
}

// readReport reads ginkgo's JSON report: the specs (It nodes) that
// labelFilter (ginkgo's --label-filter; empty: every spec) selects, and the
// suite-level nodes (BeforeSuite and the like) that failed. The specs the
// filter leaves out are other suites' of the package, not specs not run.
func readReport(path, labelFilter string) ([]spec, error) {
	selects := func([]string) bool { return true }
	if labelFilter != "" {
		filter, err := types.ParseLabelFilter(labelFilter)
		if err != nil {
			return nil, fmt.Errorf("invalid label filter %q: %w", labelFilter, err)
		}
		selects = filter
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the suite left no report: %w", err)
	}
	var reports []struct{ SpecReports []spec }
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var specs []spec
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType == "It" && selects(s.labels()) || s.LeafNodeType != "It" && s.failed() {
				specs = append(specs, s)
			}
		}
	}
	return specs, nil
}

// figure is the outcome of one suite.
type figure struct {
	suite   suite
	version string
	specs   []spec
	// err: the suite could not be built or run.
	err error
}

// counts returns the specs passed and failed, those that could not run
// here with their reason, and how many were not run for another reason (a
// run interrupted, a BeforeSuite that failed).
func (f figure) counts() (passed int, failed []spec, cannot map[string][]string, notRun int) {
	cannot = map[string][]string{}
	for _, s := range f.specs {
		switch {
		case s.State == "passed":
			passed++
		case s.failed():
			failed = append(failed, s)
		default:
			i := slices.IndexFunc(f.suite.CannotRun, func(c cannotRun) bool { return c.Spec.MatchString(s.FullText()) })
			if i < 0 {
				notRun++
				continue
			}
			reason := f.suite.CannotRun[i].Reason
			cannot[reason] = append(cannot[reason], s.FullText())
		}
	}
	return passed, failed, cannot, notRun
}

// ok reports whether every spec that ran passed.
func (f figure) ok() bool {
	if f.err != nil {
		return false
	}
	passed, failed, _, notRun := f.counts()
	return len(failed) == 0 && notRun == 0 && passed > 0
}

// line is the figure in one line.
func (f figure) line() string {
	if f.err != nil {
		return fmt.Sprintf("%s: not run: %v", f.suite.Name, f.err)
	}
	passed, failed, cannot, notRun := f.counts()
	n := 0
	for _, specs := range cannot {
		n += len(specs)
	}
	line := fmt.Sprintf("%s %s: %d passed, %d failed of %d runnable; %d cannot run here", f.suite.Name, f.version, passed, len(failed), passed+len(failed)+notRun, n)
	if notRun > 0 {
		line += fmt.Sprintf("; %d runnable not run (the run stopped first)", notRun)
	}
	return line
}

// summarize prints every figure with its failures and the specs that
// cannot run here.
func summarize(figures []figure) string {
	var b strings.Builder
	for _, f := range figures {
		fmt.Fprintf(&b, "%s (%s)\n  %s\n", f.suite.Title, f.suite.Module, f.line())
		_, failed, cannot, _ := f.counts()
		for _, s := range failed {
			fmt.Fprintf(&b, "  FAILED %s\n    %s:%d: %s\n", s.FullText(), s.Failure.Location.FileName, s.Failure.Location.LineNumber, firstLine(s.Failure.Message))
		}
		for _, c := range f.suite.CannotRun {
			for _, name := range cannot[c.Reason] {
				fmt.Fprintf(&b, "  cannot run here: %s\n    %s\n", name, c.Reason)
			}
		}
	}
	return b.String()
}

// stderrOf is the standard error of a command that failed, on a new line.
func stderrOf(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return "\n" + lastLines(string(exit.Stderr), 5)
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
