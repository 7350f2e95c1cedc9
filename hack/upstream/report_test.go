package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var testSuite = suite{
	Name:   "trainer",
	Title:  "Kubeflow Trainer e2e (test/e2e)",
	Module: "github.com/kubeflow/trainer/v2",
	CannotRun: []cannotRun{{
		Spec:   regexp.MustCompile(`runtime status server instrumentation`),
		Reason: "no container runs on a simulated node",
	}},
}

// TestFigures reads a ginkgo JSON report (a passed spec, a failed one, one
// skipped because it cannot run here, and a passed BeforeSuite that is not
// a spec) and checks the figures and the summary.
func TestFigures(t *testing.T) {
	specs, err := readReport(filepath.Join("testdata", "report.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	f := figure{suite: testSuite, version: "v2.3.0", specs: specs}
	if got, want := f.line(), "trainer v2.3.0: 1 passed, 1 failed of 2 runnable; 1 cannot run here"; got != want {
		t.Errorf("line() = %q, want %q", got, want)
	}
	if f.ok() {
		t.Error("ok() with a failed spec")
	}
	want := `Kubeflow Trainer e2e (test/e2e) (github.com/kubeflow/trainer/v2)
  trainer v2.3.0: 1 passed, 1 failed of 2 runnable; 1 cannot run here
  FAILED TrainJob e2e when Creating a TrainJob with Resource Timeouts should fail the TrainJob with DeadlineExceeded when active timeout expires
    /mod/test/e2e/e2e_test.go:601: Timed out after 600.001s. ...
  cannot run here: TrainJob e2e when Creating TrainJob with runtime status server instrumentation should inject runtime configuration which allows the runtime status endpoint to be called
    no container runs on a simulated node
`
	if diff := cmp.Diff(want, summarize([]figure{f})); diff != "" {
		t.Errorf("summary mismatch (-want +got):\n%s", diff)
	}

	// Without the failed spec every runnable spec passed.
	f.specs = slices.DeleteFunc(specs, spec.failed)
	if !f.ok() {
		t.Errorf("ok() false with %s", f.line())
	}

	// A spec the run did not reach (skipped, and not one that cannot run
	// here) is counted, and is no pass.
	f.specs = append(f.specs, spec{ContainerHierarchyTexts: []string{"TrainJob e2e"}, LeafNodeText: "another", LeafNodeType: "It", State: "skipped"})
	if got, want := f.line(), "trainer v2.3.0: 1 passed, 0 failed of 2 runnable; 1 cannot run here; 1 runnable not run (the run stopped first)"; got != want {
		t.Errorf("line() = %q, want %q", got, want)
	}
	if f.ok() {
		t.Error("ok() with a runnable spec not run")
	}
}

// TestFigureOfASuiteThatDidNotRun: no spec passed is not a pass, and a
// suite that could not be built says why in its line.
func TestFigureOfASuiteThatDidNotRun(t *testing.T) {
	if (figure{suite: testSuite}).ok() {
		t.Error("ok() for a suite that ran no spec")
	}
	f := figure{suite: testSuite, err: os.ErrNotExist}
	if got := f.line(); !strings.HasPrefix(got, "trainer: not run: ") {
		t.Errorf("line() = %q", got)
	}
	if f.ok() {
		t.Error("ok() for a suite that failed to run")
	}
}

// TestBuildReportsCompileErrors: a suite that does not compile is one error
// with the compiler's words, and leaves no binary.
func TestBuildReportsCompileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/broken\n\ngo 1.26\n")
	write("e2e_test.go", "package e2e\n\nfunc TestX(t *testing.T) { undefinedThing() }\n")
	bin := filepath.Join(t.TempDir(), "broken.test")
	err := build(t.Context(), dir, ".", bin)
	if err == nil || !strings.Contains(err.Error(), "undefined") {
		t.Fatalf("build() = %v, want the compiler's error", err)
	}
	if _, statErr := os.Stat(bin); !os.IsNotExist(statErr) {
		t.Errorf("a binary was left at %s", bin)
	}
}

func TestSkipPattern(t *testing.T) {
	got := skipPattern([]cannotRun{{Spec: regexp.MustCompile(`a b`)}, {Spec: regexp.MustCompile(`c|d`)}})
	if want := "(a b)|(c|d)"; got != want {
		t.Errorf("skipPattern() = %q, want %q", got, want)
	}
}

// TestLabelFilter: of a package's specs, those the suite's label filter
// leaves out (another feature's) are not the suite's, where a selected
// spec that was skipped is one the run did not reach.
func TestLabelFilter(t *testing.T) {
	report := `[{"SpecReports": [
	{"LeafNodeType": "BeforeSuite", "State": "passed"},
	{"ContainerHierarchyTexts": ["TrainJob"], "ContainerHierarchyLabels": [["area:singlecluster", "feature:trainjob"]], "LeafNodeText": "runs", "LeafNodeType": "It", "State": "passed"},
	{"ContainerHierarchyTexts": ["JobSet"], "ContainerHierarchyLabels": [["area:singlecluster", "feature:jobset"]], "LeafNodeText": "runs", "LeafNodeType": "It", "State": "skipped"},
	{"ContainerHierarchyTexts": ["Other"], "LeafNodeLabels": ["feature:trainjob"], "LeafNodeText": "suspends", "LeafNodeType": "It", "State": "skipped"}
]}]`
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	specs, err := readReport(path, "feature:trainjob")
	if err != nil {
		t.Fatal(err)
	}
	f := figure{suite: suite{Name: "kueue"}, version: "v0.19.1", specs: specs}
	if got, want := f.line(), "kueue v0.19.1: 1 passed, 0 failed of 2 runnable; 0 cannot run here; 1 runnable not run (the run stopped first)"; got != want {
		t.Errorf("line() = %q, want %q", got, want)
	}
	if _, err := readReport(path, "feature:("); err == nil {
		t.Error("readReport with an invalid label filter: no error")
	}
}
