package fleet

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trainersim/trainersim/sim/scenario"
)

// TestCommittedScenarios: the files of scenarios/scale are what Scenario
// writes (go run ./hack/scalegen rewrites them), and each loads.
func TestCommittedScenarios(t *testing.T) {
	for _, size := range Sizes {
		path := filepath.Join("../../../scenarios", scenario.ScaleDir, size.FileName())
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v: run go run ./hack/scalegen", err)
		}
		if string(got) != string(size.Scenario()) {
			t.Errorf("%s differs from what hack/scalegen writes: run go run ./hack/scalegen", path)
		}
		f, err := scenario.LoadFile(path, scenario.Options{FixturesDir: "../../../fixtures"})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if f.Scenario.Metadata.Name != size.Name() {
			t.Errorf("%s: name %s, want %s", path, f.Scenario.Metadata.Name, size.Name())
		}
	}
}

// TestJobNodes: a team's jobs have 1 to 8 nodes each and fill its nodes
// exactly.
func TestJobNodes(t *testing.T) {
	for _, tc := range []struct{ nodes, jobs int }{{3, 3}, {25, 13}, {25, 12}, {250, 125}, {64, 8}, {9, 2}} {
		got := JobNodes(tc.nodes, tc.jobs)
		sum := 0
		for _, n := range got {
			if n < 1 || n > 8 {
				t.Errorf("JobNodes(%d, %d) has a job of %d nodes: %v", tc.nodes, tc.jobs, n, got)
			}
			sum += n
		}
		if len(got) != tc.jobs || sum != tc.nodes {
			t.Errorf("JobNodes(%d, %d) = %v: %d jobs of %d nodes in all", tc.nodes, tc.jobs, got, len(got), sum)
		}
	}
}
