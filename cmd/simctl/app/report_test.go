package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/reports"
	"github.com/trainersim/trainersim/results"
)

// journal writes a report.jsonl into a new directory as a run of three
// planned scenarios does when the first two finish (a passing and, with
// failSecond, a failing one); with finish, the run then ends (the third
// planned run is left out of the plan).
func journal(t *testing.T, failSecond, finish bool) string {
	t.Helper()
	dir := t.TempDir()
	started := time.Date(2026, time.March, 14, 9, 26, 53, 0, time.UTC)
	scenarios := []results.Scenario{
		{Name: "alpha", File: "scenarios/alpha.yaml", Namespace: "alpha-1a2b3c", Passed: true, Started: started.Add(10 * time.Second), Duration: 2 * time.Second, Steps: []results.Step{{Name: "create", Kind: "create", Passed: true}}},
		{Name: "beta", File: "scenarios/beta.yaml", Namespace: "beta-4d5e6f", Passed: !failSecond, Started: started.Add(10 * time.Second), Duration: 3 * time.Second, Steps: []results.Step{{Name: "expect", Kind: "expect", Passed: !failSecond}}},
	}
	if failSecond {
		scenarios[1].Failure = `step "expect": pods: 0 Running, want 2`
	}
	start := reports.JournalStart{Started: started, Cluster: "envtest", KubernetesVersion: "v1.36.3", TrainerVersion: "v2.3.0", JobSetVersion: "v0.12.0", Paths: []string{"scenarios/"}}
	for _, sc := range scenarios {
		start.Runs = append(start.Runs, reports.PlannedRun{Name: sc.Name, File: sc.File})
	}
	if !finish {
		start.Runs = append(start.Runs, reports.PlannedRun{Name: "gamma", File: "scenarios/gamma.yaml"})
	}
	j, err := reports.CreateJournal(dir, start)
	if err != nil {
		t.Fatal(err)
	}
	for i := range scenarios {
		if err := j.Record(&scenarios[i]); err != nil {
			t.Fatal(err)
		}
	}
	if finish {
		if err := j.Finish(&results.Run{Started: started, Duration: 14 * time.Second, Cluster: "envtest", KubernetesVersion: "v1.36.3", TrainerVersion: "v2.3.0", JobSetVersion: "v0.12.0", Scenarios: scenarios}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readRun(t *testing.T, dir string) results.Run {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, reports.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var run results.Run
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	return run
}

func TestReportOfAKilledRun(t *testing.T) {
	dir := journal(t, false, false)
	path := filepath.Join(dir, reports.JSONLFile)
	// Killed while it wrote gamma's result.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"record":"scenario","scenario":{"name":"gamma","fi`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	stdout, stderr, code := run(t, "report", dir)
	if code != ExitFailed {
		t.Errorf("exit code %d, want %d", code, ExitFailed)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantOut := "2 scenarios in " + path + ": envtest, Kubernetes v1.36.3, Trainer v2.3.0, JobSet v0.12.0, started 2026-03-14 09:26:53 UTC\n" +
		"PASS  alpha (2s)  scenarios/alpha.yaml\n" +
		"PASS  beta (3s)  scenarios/beta.yaml\n" +
		"2 passed, 0 failed\n" +
		"run did not finish: 2 scenarios have results; 1 never reported\n" +
		"reports: " + filepath.Join(abs, "report.html") + "\n"
	if diff := cmp.Diff(wantOut, stdout); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}
	wantErr := "warning: " + path + ":4: record cut short (the run was killed while writing it), skipped: unexpected end of JSON input\n" +
		"simctl: run did not finish: 2 scenarios have results; 1 never reported\n"
	if diff := cmp.Diff(wantErr, stderr); diff != "" {
		t.Errorf("stderr mismatch (-want +got):\n%s", diff)
	}

	got := readRun(t, dir)
	var names []string
	for _, sc := range got.Scenarios {
		names = append(names, sc.Name)
	}
	if diff := cmp.Diff([]string{"alpha", "beta"}, names); diff != "" {
		t.Errorf("report.json scenarios mismatch (-want +got):\n%s", diff)
	}
	if !got.Unfinished || !cmp.Equal(got.NotReported, []string{"gamma"}) || len(got.Problems) != 1 {
		t.Errorf("report.json: unfinished %t, notReported %q, problems %q; want true, [gamma], the cut record", got.Unfinished, got.NotReported, got.Problems)
	}
	for file, want := range map[string]string{
		reports.HTMLFile:  "run did not finish: 2 scenarios have results; 1 never reported",
		reports.JUnitFile: `<property name="unfinished" value="true"></property>`,
	} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), want) {
			t.Errorf("%s does not contain %q", file, want)
		}
	}
}

func TestReportOfAFinishedRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		failSecond bool
		wantCode   int
		wantErr    string
	}{
		{name: "passed", wantCode: ExitOK},
		{name: "a scenario failed", failSecond: true, wantCode: ExitFailed, wantErr: "simctl: 1 passed, 1 failed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := journal(t, tc.failSecond, true)
			written := map[string][]byte{}
			for _, f := range []string{reports.JUnitFile, reports.JSONFile, reports.HTMLFile} {
				data, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				written[f] = data
				// report writes them again, not leaves them.
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
			stdout, stderr, code := run(t, "report", dir)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if diff := cmp.Diff(tc.wantErr, stderr); diff != "" {
				t.Errorf("stderr mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(stdout, "did not finish") {
				t.Errorf("stdout says a run that ended did not finish:\n%s", stdout)
			}
			for f, want := range written {
				got, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("%s written by report differs from the run's (-want +got):\n%s", f, diff)
				}
			}
		})
	}
}

func TestReportUsageErrors(t *testing.T) {
	empty := t.TempDir()
	notJournal := t.TempDir()
	if err := os.WriteFile(filepath.Join(notJournal, reports.JSONLFile), []byte("<testsuites>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"no directory given", []string{"report"}, "accepts 1 arg(s), received 0"},
		{"missing directory", []string{"report", missing}, "simctl: report directory " + missing + " does not exist\n"},
		{"not a directory", []string{"report", file}, "simctl: " + file + " is not a directory: give the --report-dir of a simctl run\n"},
		{"empty directory", []string{"report", empty}, "simctl: " + filepath.Join(empty, "report.jsonl") + " does not exist: " + empty + " is not the --report-dir of a simctl run, or the run stopped before its cluster was up\n"},
		{"not a journal", []string{"report", notJournal}, "simctl: " + filepath.Join(notJournal, "report.jsonl") + ":1: not a simctl run journal: invalid character '<' looking for beginning of value\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := run(t, tc.args...)
			if code != ExitUsage {
				t.Errorf("exit code %d, want %d", code, ExitUsage)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.wantStderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
	entries, err := os.ReadDir(empty)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("report wrote %d files into a directory without report.jsonl, want none", len(entries))
	}
}

// TestReadEarlierRun: --shard-durations takes a report directory (its
// report.jsonl, there also after a killed run), a report.jsonl or a
// report.json, and names a file that is none of them.
func TestReadEarlierRun(t *testing.T) {
	dir := t.TempDir()
	start := reports.JournalStart{Started: time.Now(), Cluster: "envtest", Runs: []reports.PlannedRun{{Name: "a", File: "s/a.yaml"}}}
	j, err := reports.CreateJournal(dir, start)
	if err != nil {
		t.Fatal(err)
	}
	sc := results.Scenario{Name: "a", File: "s/a.yaml", Passed: true, Duration: 3 * time.Second}
	if err := j.Record(&sc); err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(&results.Run{Started: start.Started, Cluster: "envtest", Scenarios: []results.Scenario{sc}}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, filepath.Join(dir, reports.JSONLFile), filepath.Join(dir, reports.JSONFile)} {
		run, err := readEarlierRun(path)
		if err != nil {
			t.Fatalf("readEarlierRun(%s): %v", path, err)
		}
		if len(run.Scenarios) != 1 || run.Scenarios[0].Duration != 3*time.Second || run.Scenarios[0].File != "s/a.yaml" {
			t.Errorf("readEarlierRun(%s) = %+v, want the one scenario of 3s", path, run.Scenarios)
		}
	}
	bad := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(bad, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readEarlierRun(bad); err == nil || !strings.Contains(err.Error(), "is not a simctl run's report.json") {
		t.Errorf("readEarlierRun(%s) = %v, want an error naming it", bad, err)
	}
}
