package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	goldenfile "github.com/trainersim/trainersim/internal/golden"
	"github.com/trainersim/trainersim/results"
)

// golden compares got with testdata/name (golden.Check).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		file  string
		write func(io.Writer, *results.Run) error
	}{
		{"run.junit.xml", WriteJUnit},
		{"run.json", WriteJSON},
		{"run.html", WriteHTML},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.write(&buf, testRun()); err != nil {
				t.Fatalf("failed to write report: %v", err)
			}
			golden(t, tc.file, buf.Bytes())
		})
	}
}

// junitDoc is what CI reads of junit.xml.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Suites   []struct {
		Name      string `xml:"name,attr"`
		Tests     int    `xml:"tests,attr"`
		Failures  int    `xml:"failures,attr"`
		Errors    int    `xml:"errors,attr"`
		Skipped   int    `xml:"skipped,attr"`
		Time      string `xml:"time,attr"`
		Timestamp string `xml:"timestamp,attr"`
		Cases     []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func parseJUnit(t *testing.T, data []byte) junitDoc {
	t.Helper()
	// Read every token: xml.Unmarshal alone stops at the end of the root.
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("junit report is not well-formed XML: %v\n%s", err, data)
		}
	}
	var doc junitDoc
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("failed to unmarshal junit report: %v", err)
	}
	return doc
}

func TestWriteJUnitParses(t *testing.T) {
	run := testRun()
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, run); err != nil {
		t.Fatalf("WriteJUnit() = %v", err)
	}
	doc := parseJUnit(t, buf.Bytes())

	type caseSummary struct {
		Name, Classname, Time string
		Failed                bool
		Message, Type         string
	}
	type suiteSummary struct {
		Name                             string
		Tests, Failures, Errors, Skipped int
		Time, Timestamp                  string
		Cases                            []caseSummary
	}
	var got []suiteSummary
	for _, s := range doc.Suites {
		ss := suiteSummary{Name: s.Name, Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Skipped: s.Skipped, Time: s.Time, Timestamp: s.Timestamp}
		for _, c := range s.Cases {
			cs := caseSummary{Name: c.Name, Classname: c.Classname, Time: c.Time}
			if c.Failure != nil {
				cs.Failed, cs.Message, cs.Type = true, c.Failure.Message, c.Failure.Type
			}
			ss.Cases = append(ss.Cases, cs)
		}
		got = append(got, ss)
	}
	want := []suiteSummary{{
		Name: "simctl", Tests: 2, Failures: 1, Time: "48.316", Timestamp: "2026-03-14T09:26:53",
		Cases: []caseSummary{
			{Name: "create-and-apply", Classname: "scenarios/basics/create-and-apply.yaml", Time: "6.204"},
			{
				Name: "concurrent-resize", Classname: "scenarios/conflicts/concurrent-resize.yaml", Time: "31.870",
				Failed: true, Message: run.Scenarios[1].Failure, Type: "ScenarioFailed",
			},
		},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("junit suites mismatch (-want +got):\n%s", diff)
	}
	if doc.Tests != 2 || doc.Failures != 1 {
		t.Errorf("testsuites tests=%d failures=%d, want 2 and 1", doc.Tests, doc.Failures)
	}

	body := doc.Suites[0].Cases[1].Failure.Text
	failing := run.Scenarios[1].Steps[2]
	for _, want := range []string{
		failing.Name,
		failing.Failure,
		failing.Diff, // verbatim, tabs and all
		"- actor: autoscaler\n  fieldManager: trainjob-autoscaler\n  verb: update\n",
		"  status: 409 Conflict\n  reason: Conflict\n  message: " + conflictMessage + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("failure body does not contain %q; body:\n%s", want, body)
		}
	}

	wantOut := "step 1 passed in 0.014s: alice creates the TrainJob (create)\n" +
		"step 2 passed in 0.009s: platform applies GPU resources (apply)\n" +
		"step 3 passed in 5.812s: four Pods run on a100 nodes (expect)\n"
	if diff := cmp.Diff(wantOut, doc.Suites[0].Cases[0].SystemOut); diff != "" {
		t.Errorf("system-out mismatch (-want +got):\n%s", diff)
	}
}

// hostileRun is a failed run whose every string is something a careless
// report would let through: markup, entities, NUL, other C0 controls,
// invalid UTF-8 and a CDATA terminator.
func hostileRun() *results.Run {
	const evil = "<script>alert('x')</script> & \x00\x01\x1b[31m \xff ]]> \"quoted\""
	return &results.Run{
		Started:           at(0),
		Duration:          time.Second,
		KubernetesVersion: evil,
		Interrupted:       true,
		Scenarios: []results.Scenario{{
			Name:        evil,
			File:        evil,
			Description: evil,
			Labels:      map[string]string{evil: evil},
			Namespace:   evil,
			Failure:     evil + "\nsecond line",
			Steps: []results.Step{{
				Name:    evil,
				Kind:    "concurrently",
				Failure: evil,
				Diff:    "- " + evil + "\n+ " + evil + "\n",
				Writes: []results.Write{{
					Actor: evil, FieldManager: evil, Verb: evil, PatchType: evil, Target: evil, Body: evil,
					ResourceVersionBefore: evil, ResourceVersionAfter: evil,
					Status: 422, Reason: evil, Message: evil,
					Mutations: []results.FieldChange{{Path: evil, Kind: evil, Sent: evil, Stored: evil}},
				}},
			}},
			FinalPods: []results.Pod{{Name: evil, Phase: evil, Node: evil, NodeProfile: evil, Scheduling: evil}},
			Timeline: &results.Timeline{
				Lanes: []string{evil},
				Entries: []results.TimelineEntry{
					{At: at(time.Second), Lane: evil, Kind: results.EntryWrite, Object: evil, Summary: evil, Detail: evil, Step: evil, Status: 422, Write: &results.WriteRef{}},
					{At: at(time.Second), Lane: evil, Kind: evil, Object: evil, Summary: evil, Detail: evil, Step: evil},
				},
				Truncated: true,
				Problems:  []string{evil},
			},
		}},
	}
}

func TestHostileStrings(t *testing.T) {
	run := hostileRun()

	var x bytes.Buffer
	if err := WriteJUnit(&x, run); err != nil {
		t.Fatalf("WriteJUnit() = %v", err)
	}
	doc := parseJUnit(t, x.Bytes())
	if got := doc.Suites[0].Cases[0].Name; !strings.HasPrefix(got, "<script>alert('x')</script> & \uFFFD\uFFFD\uFFFD[31m \uFFFD ]]>") {
		t.Errorf("testcase name = %q, want the scenario name with forbidden runes replaced by U+FFFD", got)
	}
	if f := doc.Suites[0].Cases[0].Failure; f == nil || strings.Contains(f.Message, "\n") || !strings.Contains(f.Text, "]]> \"quoted\"") {
		t.Errorf("failure = %+v, want a one-line message and a body that keeps ]]>", f)
	}
	if bytes.ContainsAny(x.Bytes(), "\x00\x01\x1b") {
		t.Errorf("junit report contains control characters XML 1.0 forbids:\n%q", x.String())
	}

	var h bytes.Buffer
	if err := WriteHTML(&h, run); err != nil {
		t.Fatalf("WriteHTML() = %v", err)
	}
	page := h.String()
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Errorf("html report contains an unescaped <script>")
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Errorf("html report does not show the escaped <script> text")
	}
	if strings.Contains(page, "\x00") {
		t.Errorf("html report contains a NUL")
	}

	var j bytes.Buffer
	if err := WriteJSON(&j, run); err != nil {
		t.Fatalf("WriteJSON() = %v", err)
	}
	if !json.Valid(j.Bytes()) {
		t.Errorf("json report is not valid JSON:\n%s", j.String())
	}
}

func TestHTMLSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, testRun()); err != nil {
		t.Fatalf("WriteHTML() = %v", err)
	}
	page := buf.String()
	for _, bad := range []string{"<script", "http://", "https://", "src=", "<link", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("html report contains %q; it must be self-contained", bad)
		}
	}
	// The failed scenario comes first and its failing step is linked from the top.
	if i, j := strings.Index(page, `id="scenario-2"`), strings.Index(page, `id="scenario-1"`); i < 0 || j < 0 || i > j {
		t.Errorf("failed scenario-2 section at %d, passed scenario-1 at %d; want the failed one first", i, j)
	}
	if !strings.Contains(page, `<a href="#scenario-2-step-3">`) {
		t.Errorf("html report does not link to the failed step scenario-2-step-3")
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	want := testRun()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, want); err != nil {
		t.Fatalf("WriteJSON() = %v", err)
	}
	var got results.Run
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("failed to unmarshal json report: %v", err)
	}
	if diff := cmp.Diff(want, &got); diff != "" {
		t.Errorf("Run mismatch (-want +got):\n%s", diff)
	}
}

func TestWriteAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "nested")
	run := testRun()
	// A stale report is replaced.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, HTMLFile), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteAll(dir, run); err != nil {
		t.Fatalf("WriteAll() = %v", err)
	}

	for _, tc := range []struct {
		file  string
		write func(io.Writer, *results.Run) error
	}{
		{JUnitFile, WriteJUnit},
		{JSONFile, WriteJSON},
		{HTMLFile, WriteHTML},
	} {
		var want bytes.Buffer
		if err := tc.write(&want, run); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, tc.file))
		if err != nil {
			t.Errorf("failed to read %s: %v", tc.file, err)
			continue
		}
		if diff := cmp.Diff(want.String(), string(got)); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", tc.file, diff)
		}
		fi, err := os.Stat(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o644 {
			t.Errorf("%s mode = %v, want 0644", tc.file, got)
		}
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// ReadDir sorts by name.
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{JUnitFile, HTMLFile, JSONFile}, names); diff != "" {
		t.Errorf("files in %s mismatch (-want +got):\n%s", dir, diff)
	}
}

func TestWriteAllErrors(t *testing.T) {
	t.Run("nil run", func(t *testing.T) {
		dir := t.TempDir()
		err := WriteAll(dir, nil)
		if !errors.Is(err, errNilRun) {
			t.Errorf("WriteAll(nil) = %v, want %v", err, errNilRun)
		}
		if want := "failed to write junit.xml: failed to write junit report: run is nil"; err == nil || err.Error() != want {
			t.Errorf("WriteAll(nil) = %v, want the first error %q", err, want)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 0 {
			t.Errorf("WriteAll(nil) left %d files behind, want none", len(entries))
		}
	})
	t.Run("directory is a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "report")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WriteAll(file, testRun()); err == nil || !strings.HasPrefix(err.Error(), "failed to create report directory: ") {
			t.Errorf("WriteAll(file) = %v, want a failure to create the directory", err)
		}
	})
}

func TestDiffLines(t *testing.T) {
	got := diffLines("  map[string]any{\n- \t\"a\": 1,\n+ \t\"a\": 2,\n  }\n")
	want := []htmlDiffLine{
		{Text: "  map[string]any{"},
		{Class: "del", Text: "- \t\"a\": 1,"},
		{Class: "add", Text: "+ \t\"a\": 2,"},
		{Text: "  }"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diffLines() mismatch (-want +got):\n%s", diff)
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{400 * time.Microsecond, "400µs"},
		{14*time.Millisecond + 300*time.Microsecond, "14ms"},
		{30002 * time.Millisecond, "30.002s"},
		{123456 * time.Millisecond, "2m3.456s"},
	} {
		if got := formatDuration(tc.in); got != tc.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestXMLSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"tab\tnl\ncr\r", "tab\tnl\ncr\r"},
		{"nul\x00 esc\x1b", "nul\uFFFD esc\uFFFD"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"kept \uFFFD é 日本", "kept \uFFFD é 日本"},
		{"\uFFFE", "\uFFFD"},
	} {
		if got := xmlSafe(tc.in); got != tc.want {
			t.Errorf("xmlSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestWriteJUnitFailingStepWrites(t *testing.T) {
	run := testRun()
	sc := &run.Scenarios[1]
	// The race itself fails: the autoscaler's conflict was not declared.
	race := &sc.Steps[1]
	race.Passed = false
	race.Failure = "update TrainJob/concurrent-resize-c21d9e/llm as trainjob-autoscaler was refused: HTTP 409 Conflict"
	race.Writes[2].Expected = false
	race.Writes[0].Warnings = []string{`unknown field "spec.suspended"`, "second warning"}
	sc.Steps = sc.Steps[:2]
	sc.Failure = `step "three managers race": ` + race.Failure

	var buf bytes.Buffer
	if err := WriteJUnit(&buf, run); err != nil {
		t.Fatalf("WriteJUnit() = %v", err)
	}
	doc := parseJUnit(t, buf.Bytes())
	got := doc.Suites[0].Cases[1].Failure.Text
	want := sc.Failure + "\n" +
		"\n" +
		"Step 2 \"three managers race\" (concurrently) failed after 0.021s:\n" +
		race.Failure + "\n" +
		"\n" +
		"Writes of step 2:\n" +
		"- actor: kueue\n" +
		"  fieldManager: kueue-admission\n" +
		"  verb: patch (merge)\n" +
		"  target: TrainJob/concurrent-resize-c21d9e/llm\n" +
		"  resourceVersion: 2040 -> 2041\n" +
		"  status: 200 OK\n" +
		"  warnings:\n" +
		"  - unknown field \"spec.suspended\"\n" +
		"  - second warning\n" +
		"  expected: true\n" +
		"- actor: alice\n" +
		"  fieldManager: kubectl-edit\n" +
		"  verb: update\n" +
		"  target: TrainJob/concurrent-resize-c21d9e/llm\n" +
		"  resourceVersion: 2040 -> (none)\n" +
		"  status: 409 Conflict\n" +
		"  reason: Conflict\n" +
		"  message: " + conflictMessage + "\n" +
		"  expected: true\n" +
		"- actor: autoscaler\n" +
		"  fieldManager: trainjob-autoscaler\n" +
		"  verb: update\n" +
		"  target: TrainJob/concurrent-resize-c21d9e/llm\n" +
		"  resourceVersion: 2040 -> (none)\n" +
		"  status: 409 Conflict\n" +
		"  reason: Conflict\n" +
		"  message: " + conflictMessage + "\n" +
		"  expected: false\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failure body mismatch (-want +got):\n%s", diff)
	}
}

// TestSkippedScenario checks how a scenario skipped on this cluster (its
// spec.clusters) is reported: a JUnit <skipped> with the reason, counted as
// skipped and not failed, a "skipped" badge and the reason in the HTML, and
// a run that still passes.
func TestSkippedScenario(t *testing.T) {
	const reason = "holds on envtest only: asserts envtest's missing volume binding"
	run := &results.Run{Started: at(0), Cluster: "kind", Scenarios: []results.Scenario{
		{Name: "ran", File: "a.yaml", Passed: true},
		{Name: "pvc", File: "b.yaml", Skipped: reason},
	}}
	if !run.Passed() {
		t.Error("a run whose only other scenario passed must pass")
	}
	var junit bytes.Buffer
	if err := WriteJUnit(&junit, run); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Skipped  int `xml:"skipped,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Skipped int `xml:"skipped,attr"`
			Cases   []struct {
				Name    string `xml:"name,attr"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(junit.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Skipped != 1 || doc.Failures != 0 || len(doc.Suites) != 1 || doc.Suites[0].Skipped != 1 {
		t.Errorf("junit counts: skipped %d (suite %v), failures %d; want 1, 1, 0", doc.Skipped, doc.Suites, doc.Failures)
	}
	for _, c := range doc.Suites[0].Cases {
		if got := c.Skipped != nil; got != (c.Name == "pvc") {
			t.Errorf("test case %s: skipped element present %v", c.Name, got)
		}
		if c.Skipped != nil && c.Skipped.Message != reason {
			t.Errorf("skipped message %q, want %q", c.Skipped.Message, reason)
		}
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, run); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">skipped</span> pvc", "skipped on this cluster: " + template.HTMLEscapeString(reason)} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
