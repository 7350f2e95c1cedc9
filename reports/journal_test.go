package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/results"
)

// journalStart is the start record of testRun with a third run, "slow",
// that never reports.
func journalStart(run *results.Run) JournalStart {
	start := JournalStart{
		Started:           run.Started,
		Cluster:           run.Cluster,
		KubernetesVersion: run.KubernetesVersion,
		TrainerVersion:    run.TrainerVersion,
		JobSetVersion:     run.JobSetVersion,
		KueueVersion:      run.KueueVersion,
		Paths:             []string{"scenarios/"},
	}
	for _, sc := range run.Scenarios {
		start.Runs = append(start.Runs, PlannedRun{Name: sc.Name, File: sc.File})
	}
	start.Runs = append(start.Runs, PlannedRun{Name: "slow", File: "scenarios/slow.yaml"})
	return start
}

// recordAll creates a journal in dir for run and records its scenarios in
// reverse order, as parallel scenarios may finish.
func recordAll(t *testing.T, dir string, run *results.Run) *Journal {
	t.Helper()
	j, err := CreateJournal(dir, journalStart(run))
	if err != nil {
		t.Fatalf("CreateJournal() = %v", err)
	}
	for i := len(run.Scenarios) - 1; i >= 0; i-- {
		if err := j.Record(&run.Scenarios[i]); err != nil {
			t.Fatalf("Record(%s) = %v", run.Scenarios[i].Name, err)
		}
	}
	return j
}

// journalLines returns the "record" field of every line of dir's
// report.jsonl.
func journalLines(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		t.Errorf("%s does not end with a line break", JSONLFile)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var rec struct {
			Record string `json:"record"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %q of %s is not JSON: %v", line, JSONLFile, err)
		}
		kinds = append(kinds, rec.Record)
	}
	return kinds
}

func TestJournalFinishedRunRebuildsTheSameReports(t *testing.T) {
	dir := t.TempDir()
	run := testRun()
	run.NotReported = nil
	// The run that finished planned exactly its two scenarios.
	start := journalStart(run)
	start.Runs = start.Runs[:2]
	j, err := CreateJournal(dir, start)
	if err != nil {
		t.Fatal(err)
	}
	for i := range run.Scenarios {
		if err := j.Record(&run.Scenarios[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Finish(run); err != nil {
		t.Fatalf("Finish() = %v", err)
	}
	if diff := cmp.Diff([]string{RecordStart, RecordScenario, RecordScenario, RecordEnd}, journalLines(t, dir)); diff != "" {
		t.Errorf("records mismatch (-want +got):\n%s", diff)
	}
	got, err := ReadJournal(filepath.Join(dir, JSONLFile))
	if err != nil {
		t.Fatalf("ReadJournal() = %v", err)
	}
	if diff := cmp.Diff(run, got); diff != "" {
		t.Errorf("rebuilt Run mismatch (-want +got):\n%s", diff)
	}
	// What simctl report writes is what the run wrote.
	rebuilt := t.TempDir()
	if err := WriteAll(rebuilt, got); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{JUnitFile, JSONFile, HTMLFile} {
		want, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(rebuilt, f))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(data)); diff != "" {
			t.Errorf("rebuilt %s mismatch (-want +got):\n%s", f, diff)
		}
	}
	if err := j.Close(); err != nil {
		t.Errorf("Close() after Finish() = %v, want nil", err)
	}
	if err := j.Record(&run.Scenarios[0]); err == nil {
		t.Error("Record() after Finish() = nil, want an error")
	}
}

func TestJournalKilledRun(t *testing.T) {
	dir := t.TempDir()
	// An earlier run's reports must not pass for this run's.
	for _, f := range []string{JUnitFile, JSONFile, HTMLFile, JSONLFile} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("stale"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := testRun()
	j, err := CreateJournal(dir, journalStart(run))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{JSONFile, HTMLFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the earlier run's %s is still there (stat: %v)", f, err)
		}
	}
	junit := func() junitDoc {
		data, err := os.ReadFile(filepath.Join(dir, JUnitFile))
		if err != nil {
			t.Fatal(err)
		}
		return parseJUnit(t, data)
	}
	if got := junit(); got.Tests != 0 {
		t.Errorf("junit.xml at start has %d tests, want 0", got.Tests)
	}
	// junit.xml follows every result, in the planned order.
	var want []string
	for i := len(run.Scenarios) - 1; i >= 0; i-- {
		if err := j.Record(&run.Scenarios[i]); err != nil {
			t.Fatal(err)
		}
		want = append([]string{run.Scenarios[i].Name}, want...)
		var names []string
		for _, c := range junit().Suites[0].Cases {
			names = append(names, c.Name)
		}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("junit.xml test cases after %d results mismatch (-want +got):\n%s", len(want), diff)
		}
	}
	// Killed: no Finish, not even Close.
	if diff := cmp.Diff([]string{RecordStart, RecordScenario, RecordScenario}, journalLines(t, dir)); diff != "" {
		t.Errorf("records mismatch (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(filepath.Join(dir, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`<property name="unfinished" value="true"></property>`,
		`<property name="notReported" value="1"></property>`,
		"run did not finish: 2 scenarios have results; 1 never reported\nnever reported: slow\n",
	} {
		if !strings.Contains(string(data), s) {
			t.Errorf("junit.xml of a killed run does not contain %q:\n%s", s, data)
		}
	}

	got, err := ReadJournal(filepath.Join(dir, JSONLFile))
	if err != nil {
		t.Fatalf("ReadJournal() = %v", err)
	}
	wantRun := testRun()
	wantRun.Unfinished = true
	wantRun.NotReported = []string{"slow"}
	// Up to the end of the last result: concurrent-resize, started at
	// 28.3 s for 11.958 s.
	last := wantRun.Scenarios[1]
	wantRun.Duration = last.Started.Add(last.Duration).Sub(wantRun.Started)
	if diff := cmp.Diff(wantRun, got); diff != "" {
		t.Errorf("rebuilt Run mismatch (-want +got):\n%s", diff)
	}
	if want := "run did not finish: 2 scenarios have results; 1 never reported"; got.Incomplete() != want {
		t.Errorf("Incomplete() = %q, want %q", got.Incomplete(), want)
	}
	if got.Passed() {
		t.Error("Passed() = true for a run that did not finish")
	}
}

func TestReadJournalSkipsBadLines(t *testing.T) {
	run := testRun()
	for _, tc := range []struct {
		name string
		// edit changes the journal of run's two results, without an end
		// record.
		edit         func(t *testing.T, path string, lines []string)
		wantNames    []string
		wantProblems []string
	}{
		{
			name: "last line cut short by the kill",
			edit: func(t *testing.T, path string, lines []string) {
				third := run.Scenarios[0]
				third.Name = "slow"
				line, err := journalLine(journalRecord{Record: RecordScenario, Scenario: &third})
				if err != nil {
					t.Fatal(err)
				}
				appendTo(t, path, line[:len(line)/2])
			},
			wantNames:    []string{"create-and-apply", "concurrent-resize"},
			wantProblems: []string{"PATH:4: record cut short (the run was killed while writing it), skipped: unexpected end of JSON input"},
		},
		{
			name: "garbled line between results",
			edit: func(t *testing.T, path string, lines []string) {
				rewrite(t, path, lines[0], lines[1], `{"record":"scenario","scen`+"\x00\n", lines[2])
			},
			wantNames:    []string{"create-and-apply", "concurrent-resize"},
			wantProblems: []string{"PATH:3: unreadable record skipped: invalid character '\\x00' in string literal"},
		},
		{
			name: "unknown record, empty line, record without its scenario",
			edit: func(t *testing.T, path string, lines []string) {
				rewrite(t, path, lines[0], `{"record":"progress"}`+"\n", "\n", `{"record":"scenario"}`+"\n", lines[1], lines[2])
			},
			wantNames: []string{"create-and-apply", "concurrent-resize"},
			wantProblems: []string{
				`PATH:2: unreadable record skipped: unknown record "progress"`,
				"PATH:3: unreadable record skipped: empty line",
				`PATH:4: unreadable record skipped: scenario record without "scenario" or its name`,
			},
		},
		{
			name: "a scenario recorded twice: the later result is kept",
			edit: func(t *testing.T, path string, lines []string) {
				appendTo(t, path, []byte(lines[1]))
			},
			wantNames:    []string{"create-and-apply", "concurrent-resize"},
			wantProblems: []string{"PATH:4: concurrent-resize recorded a second time; the later result is kept"},
		},
		{
			name: "a second start record",
			edit: func(t *testing.T, path string, lines []string) {
				appendTo(t, path, []byte(lines[0]))
			},
			wantNames:    []string{"create-and-apply", "concurrent-resize"},
			wantProblems: []string{"PATH:4: second start record skipped"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			recordAll(t, dir, run)
			path := filepath.Join(dir, JSONLFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
			lines[len(lines)-1] += "\n"
			tc.edit(t, path, lines)

			got, err := ReadJournal(path)
			if err != nil {
				t.Fatalf("ReadJournal() = %v", err)
			}
			var names []string
			for _, sc := range got.Scenarios {
				names = append(names, sc.Name)
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("scenarios mismatch (-want +got):\n%s", diff)
			}
			var want []string
			for _, p := range tc.wantProblems {
				want = append(want, strings.ReplaceAll(p, "PATH", path))
			}
			if diff := cmp.Diff(want, got.Problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
			if !got.Unfinished {
				t.Error("Unfinished = false for a journal without an end record")
			}
		})
	}
}

func TestReadJournalErrors(t *testing.T) {
	start, err := journalLine(journalRecord{Record: RecordStart, Start: &JournalStart{Format: JournalFormat + 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		content *string // nil: no file
		wantIs  error
		want    string
	}{
		{name: "missing", wantIs: os.ErrNotExist, want: "failed to open PATH: open PATH: no such file or directory"},
		{name: "empty", content: ptr(""), wantIs: ErrNotJournal, want: "PATH: not a simctl run journal: the file is empty"},
		{name: "not JSON", content: ptr("<testsuites>\n"), wantIs: ErrNotJournal, want: "PATH:1: not a simctl run journal: invalid character '<' looking for beginning of value"},
		{name: "start cut short", content: ptr(`{"record":"start","st`), wantIs: ErrNotJournal, want: "PATH:1: not a simctl run journal: unexpected end of JSON input"},
		{name: "no start record", content: ptr(`{"record":"end","end":{"duration":1}}` + "\n"), wantIs: ErrNotJournal, want: `PATH:1: not a simctl run journal: the first record is "end", not "start"`},
		{name: "another format", content: ptr(string(start)), wantIs: ErrNotJournal, want: "PATH:1: not a simctl run journal: format 2, this simctl reads format 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), JSONLFile)
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run, err := ReadJournal(path)
			if !errors.Is(err, tc.wantIs) {
				t.Fatalf("ReadJournal() = %v, %v; want an error that is %v", run, err, tc.wantIs)
			}
			if want := strings.ReplaceAll(tc.want, "PATH", path); err.Error() != want {
				t.Errorf("ReadJournal() error = %q, want %q", err, want)
			}
		})
	}
}

func TestJournalInterruptedRun(t *testing.T) {
	dir := t.TempDir()
	run := testRun()
	j := recordAll(t, dir, run)
	run.Interrupted = true
	run.NotReported = []string{"slow"}
	if err := j.Finish(run); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJournal(filepath.Join(dir, JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(run, got); diff != "" {
		t.Errorf("rebuilt Run mismatch (-want +got):\n%s", diff)
	}
	if want := "run was interrupted: 2 scenarios have results; 1 never reported"; got.Incomplete() != want {
		t.Errorf("Incomplete() = %q, want %q", got.Incomplete(), want)
	}
}

func TestHTMLOfAnUnfinishedRun(t *testing.T) {
	run := testRun()
	run.Scenarios = run.Scenarios[:1]
	run.Unfinished = true
	run.NotReported = []string{"concurrent-resize", "slow"}
	run.Problems = []string{"out/report.jsonl:3: record cut short (the run was killed while writing it), skipped: unexpected end of JSON input"}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, run); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, s := range []string{
		`<title>simctl unfinished: 1 of 1 scenarios passed</title>`,
		`<header class="run unfinished">`,
		`<strong>Did not finish.</strong>`,
		`<span class="incomplete">run did not finish: 1 scenario has results; 2 never reported</span>`,
		`Never reported: <code>concurrent-resize</code>, <code>slow</code>.`,
		`<li><code>out/report.jsonl:3: record cut short (the run was killed while writing it), skipped: unexpected end of JSON input</code></li>`,
	} {
		if !strings.Contains(page, s) {
			t.Errorf("report.html of an unfinished run does not contain %q", s)
		}
	}
	if strings.Contains(page, "<strong>Interrupted.</strong>") {
		t.Error("report.html of an unfinished run says it was interrupted")
	}
}

func TestJournalStartDirIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateJournal(file, JournalStart{Started: time.Now()}); err == nil || !strings.HasPrefix(err.Error(), "failed to create report directory: ") {
		t.Errorf("CreateJournal(file) = %v, want a failure to create the directory", err)
	}
}

func appendTo(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

func rewrite(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
