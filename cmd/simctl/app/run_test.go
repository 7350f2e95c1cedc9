package app

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/reports"
)

func TestPrintScenario(t *testing.T) {
	failed := &reports.Scenario{
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
