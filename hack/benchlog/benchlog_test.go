package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const benchOutput = `goos: linux
goarch: amd64
BenchmarkStart-2   	       3	         2.630 bare-envtest-s	         3.090 full-harness-s	         1.175 full/bare	         0 ns/op
start times over 3 runs each
BenchmarkImport 	       1	        41.5 MB/s	       212 peak-heap-MB	 123456 ns/op
PASS
ok  	github.com/trainersim/trainersim/sim/providers/envtest	60.1s
`

// TestRecordAppends: the output passes through unchanged, and each figure
// of each result line (ns/op of 0 left out, the GOMAXPROCS suffix cut) is
// appended to the log after what it held, with its commit and machine.
func TestRecordAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	m := Machine{Host: "h", CPUs: 2}
	for range 2 {
		var out bytes.Buffer
		n, err := record(strings.NewReader(benchOutput), &out, path, now, m, "c36c62f0", true)
		if err != nil {
			t.Fatal(err)
		}
		if n != 6 {
			t.Errorf("%d figures, want 6", n)
		}
		if out.String() != benchOutput {
			t.Errorf("the output was not passed through:\n%s", out.String())
		}
	}
	log, err := readLog(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range log {
		got = append(got, r.Benchmark+" "+r.Metric+" "+trim(r.Value))
	}
	want := []string{
		"Start bare-envtest-s 2.63", "Start full-harness-s 3.09", "Start full/bare 1.175",
		"Import MB/s 41.5", "Import ns/op 123456", "Import peak-heap-MB 212",
	}
	if diff := cmp.Diff(append(want, want...), got); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if r := log[0]; r.Commit != "c36c62f0" || !r.Dirty || r.Host != m || !r.Time.Equal(now) {
		t.Errorf("record %+v: want the commit, its changes, the machine and the time", r)
	}
}

// TestRecordWithoutFiguresLeavesNoLog: output without a result line (a
// benchmark that failed before it reported) appends nothing.
func TestRecordWithoutFiguresLeavesNoLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	n, err := record(strings.NewReader("--- FAIL: BenchmarkCorpus\nFAIL\n"), &bytes.Buffer{}, path, time.Now(), Machine{}, "", false)
	if err != nil || n != 0 {
		t.Fatalf("record: %d, %v; want 0 figures", n, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a log was written: %v", err)
	}
}

// TestReport: a plot per target, the figure over the target drawn red, and
// a line per target with its latest figure.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	log := []Record{
		{Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Commit: "aaaaaaaaaa", Benchmark: "Start", Metric: "full/bare", Value: 1.2},
		{Time: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), Commit: "bbbbbbbbbb", Dirty: true, Benchmark: "Start", Metric: "full/bare", Value: 1.4},
	}
	var out bytes.Buffer
	if err := report(log, dir, &out); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "start-ratio.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`fill="#36c"><title>2026-12-01 00:00 aaaaaaa`, `fill="#c00"><title>2026-12-02 00:00 bbbbbbb+changes`, "latest 1.4 of 2 runs"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("start-ratio.svg lacks %q", want)
		}
	}
	if !strings.Contains(out.String(), "| 1.3 ratio | 1.4 (over) | 2 |") {
		t.Errorf("report:\n%s", out.String())
	}
	for _, tg := range targets {
		if _, err := os.Stat(filepath.Join(dir, tg.File+".svg")); err != nil {
			t.Errorf("no plot of %s: %v", tg.File, err)
		}
	}
	if !strings.Contains(out.String(), "not measured | 0 |") {
		t.Errorf("a target without figures is not said so:\n%s", out.String())
	}
}
