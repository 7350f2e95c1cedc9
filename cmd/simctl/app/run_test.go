package app

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/results"
)

func TestPrintScenario(t *testing.T) {
	failed := &results.Scenario{
		Name:      "rmw [order kueue > policy, seed 1]",
		File:      "scenarios/rmw.yaml",
		Namespace: "rmw-4f1c2a",
		Duration:  1234 * time.Millisecond,
		Failure:   `step "race": outcomes: 1 succeeded, want 2`,
	}
	for _, tc := range []struct {
		name string
		kept bool
		want string
	}{
		{name: "run", want: "FAIL  rmw [order kueue > policy, seed 1] (1.2s)  scenarios/rmw.yaml\n" +
			"      step \"race\": outcomes: 1 succeeded, want 2\n"},
		{name: "kept: the namespace to look in", kept: true, want: "FAIL  rmw [order kueue > policy, seed 1] (1.2s)  scenarios/rmw.yaml\n" +
			"      namespace rmw-4f1c2a\n" +
			"      step \"race\": outcomes: 1 succeeded, want 2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printScenario(&out, failed, tc.kept)
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeedWithoutInterleavingsWarns(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	scenarios, err := filepath.Abs("testdata/lint/good/train.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := filepath.Abs("../../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	// No assets: the run stops at the cluster, after the scenarios are
	// loaded and the warning is printed.
	_, stderr, code := run(t, "run", "--seed", "3", "--assets", t.TempDir(), "--fixtures", fixtures, scenarios)
	if code != ExitCluster {
		t.Errorf("exit code %d, want %d; stderr: %s", code, ExitCluster, stderr)
	}
	if !strings.Contains(stderr, "warning: --seed has no effect: no selected scenario explores interleavings") {
		t.Errorf("stderr %q does not warn that --seed does nothing", stderr)
	}
}

// TestPrintStepWarnings: with -v, the server's warnings on a write are
// printed under the write's line, and only there.
func TestPrintStepWarnings(t *testing.T) {
	sc := &results.Scenario{Name: "pruned"}
	st := &results.Step{Name: "create", Kind: "concurrently", Passed: true, Duration: 42 * time.Millisecond, Writes: []results.Write{
		{Verb: "create", Target: "TrainJob ns/a", FieldManager: "kubeflow-sdk", Status: 201,
			Warnings: []string{`unknown field "spec.suspended"`, `unknown field "spec.numNode"`}},
		{Verb: "create", Target: "TrainJob ns/b", FieldManager: "kueue-admission", Status: 201},
	}}
	var out bytes.Buffer
	printStep(&out, sc, st)
	want := "  ok    pruned / create (concurrently, 40ms)\n" +
		"          create TrainJob ns/a as kubeflow-sdk: HTTP 201\n" +
		"            warning: unknown field \"spec.suspended\"\n" +
		"            warning: unknown field \"spec.numNode\"\n" +
		"          create TrainJob ns/b as kueue-admission: HTTP 201\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
}
