package reports

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestKueueVersion: a run that started Kueue says which in its JUnit
// properties, its HTML versions and its journal; a run without Kueue
// names none.
func TestKueueVersion(t *testing.T) {
	for _, kueue := range []string{"v0.19.1", ""} {
		run := testRun()
		run.KueueVersion = kueue
		var junit, html bytes.Buffer
		if err := WriteJUnit(&junit, run); err != nil {
			t.Fatal(err)
		}
		if err := WriteHTML(&html, run); err != nil {
			t.Fatal(err)
		}
		property := `<property name="kueueVersion" value="v0.19.1">`
		span := "<span>Kueue v0.19.1</span>"
		if got := strings.Contains(junit.String(), property); got != (kueue != "") {
			t.Errorf("Kueue %q: JUnit has %s: %t", kueue, property, got)
		}
		if got := strings.Contains(html.String(), span); got != (kueue != "") {
			t.Errorf("Kueue %q: HTML has %s: %t", kueue, span, got)
		}
		if kueue == "" && (strings.Contains(junit.String(), "kueueVersion") || strings.Contains(html.String(), "<span>Kueue ")) {
			t.Errorf("a run without Kueue names a Kueue version")
		}

		// A run killed before it ended is rebuilt from report.jsonl
		// with the version its start record wrote.
		dir := t.TempDir()
		if err := recordAll(t, dir, run).Close(); err != nil {
			t.Fatal(err)
		}
		rebuilt, err := ReadJournal(filepath.Join(dir, JSONLFile))
		if err != nil {
			t.Fatal(err)
		}
		if rebuilt.KueueVersion != kueue {
			t.Errorf("the run rebuilt from the journal has Kueue %q, want %q", rebuilt.KueueVersion, kueue)
		}
	}
}
