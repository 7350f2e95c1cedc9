package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/results"
)

func writeRun(t *testing.T, scenarios ...results.Scenario) string {
	t.Helper()
	dir := t.TempDir()
	data, err := json.Marshal(results.Run{Scenarios: scenarios})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCompare: a scenario that passed once and failed once is reported with
// its failing run; steady ones (passed, or skipped, every time) are not.
func TestCompare(t *testing.T) {
	steady := results.Scenario{Name: "steady", Passed: true}
	skipped := results.Scenario{Name: "other-release", Skipped: "holds for v2.1.0"}
	dirs := []string{
		writeRun(t, steady, skipped, results.Scenario{Name: "racy", Passed: true}),
		writeRun(t, steady, skipped, results.Scenario{Name: "racy", Failure: "step \"a\": not true within 30s\nmore"}),
	}
	var out bytes.Buffer
	changed, err := compare(&out, dirs)
	if err != nil {
		t.Fatal(err)
	}
	want := "CHANGED  racy: passed in 1, failed in 1 of 2 runs\n" +
		"         run 2: step \"a\": not true within 30s\n" +
		"soak: 1 of 3 scenarios changed verdict over 2 runs\n"
	if diff := cmp.Diff(want, out.String()); diff != "" || changed != 1 {
		t.Errorf("changed %d; output mismatch (-want +got):\n%s", changed, diff)
	}
	if _, err := compare(&out, append(dirs, t.TempDir())); err == nil {
		t.Error("a run without report.json was not an error")
	}
}
