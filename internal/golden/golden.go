// Package golden compares what a test produced with a golden file under
// testdata/, and writes the file instead when UPDATE_GOLDEN is set, as
// `make update` runs the tests. It imports no testing package: a test
// passes its *testing.T as a T.
package golden

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-cmp/cmp"
)

// Env is the environment variable that makes Check write golden files
// (`make update` sets it).
const Env = "UPDATE_GOLDEN"

// T is what Check needs of a *testing.T.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// Updating reports whether the golden files are being written.
func Updating() bool { return os.Getenv(Env) != "" }

// Check fails the test with a "mismatch (-want +got)" diff unless got is
// the content of the golden file at path; when Updating, it writes got
// there instead.
func Check(t T, path string, got []byte) {
	t.Helper()
	if Updating() {
		if err := write(path, got); err != nil {
			t.Fatalf("%v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("failed to read golden file (make update writes it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("failed to create golden directory: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("failed to write golden file: %w", err)
	}
	return nil
}
