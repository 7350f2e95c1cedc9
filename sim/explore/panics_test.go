package explore

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLogScan: the lines a component logs a panic with, each once, from
// every *.log but the audit log; a line still being written is read once
// it ends; a log that shrank (a restarted component's) is read again from
// its start.
func TestLogScan(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, flag int) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
	}
	write("controllers.log", "reconciling\nE1203 Observed a panic in reconciler: runtime error: index out of range\n", os.O_APPEND)
	write("audit.log", `{"requestObject":"panic: not a log line"}`+"\n", os.O_APPEND)
	write("kueue.log", "starting\npanic: assignment to entry in nil map\ngoroutine 1", os.O_APPEND)
	s := &LogScan{Dir: dir}
	got, err := s.Panics()
	want := []string{"controllers.log: E1203 Observed a panic in reconciler: runtime error: index out of range", "kueue.log: panic: assignment to entry in nil map"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("first scan: %q, %v; want %q", got, err, want)
	}
	if got, err := s.Panics(); err != nil || len(got) != 0 {
		t.Errorf("nothing new: %q, %v", got, err)
	}
	write("kueue.log", " [running]:\nE1203 Observed a panic again\n", os.O_APPEND)
	if got, err := s.Panics(); err != nil || !slices.Equal(got, []string{"kueue.log: E1203 Observed a panic again"}) {
		t.Errorf("the rest of the line, then a new one: %q, %v", got, err)
	}
	write("controllers.log", "panic: after a restart\n", os.O_TRUNC)
	if got, err := s.Panics(); err != nil || !slices.Equal(got, []string{"controllers.log: panic: after a restart"}) {
		t.Errorf("a log that shrank: %q, %v", got, err)
	}
	if got, err := (&LogScan{Dir: filepath.Join(dir, "absent")}).Panics(); err != nil || got != nil {
		t.Errorf("no folder: %q, %v", got, err)
	}
}
