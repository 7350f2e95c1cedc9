package reports

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/trainersim/trainersim/results"
)

// File names WriteAll writes into its directory.
const (
	// JUnitFile is the JUnit XML report, for CI.
	JUnitFile = "junit.xml"
	// JSONFile is the whole Run as JSON.
	JSONFile = "report.json"
	// HTMLFile is the page a person reads.
	HTMLFile = "report.html"
)

// WriteAll writes junit.xml, report.json and report.html into dir (created if missing), each
// atomically (write to a temp file in dir, then rename), returning the first error but attempting all three.
//
// A report that fails leaves the file it would have replaced as it was and
// no temporary file behind. The files are readable by everyone (0644).
func WriteAll(dir string, run *results.Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed to create report directory: %w", err)
	}
	var first error
	for _, r := range []struct {
		name  string
		write func(io.Writer, *results.Run) error
	}{
		{JUnitFile, WriteJUnit},
		{JSONFile, WriteJSON},
		{HTMLFile, WriteHTML},
	} {
		if err := writeFileAtomic(filepath.Join(dir, r.name), func(w io.Writer) error { return r.write(w, run) }); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// writeFileAtomic writes path through a temporary file in the same
// directory that is renamed over path only once write and close succeeded.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir, name := filepath.Split(path)
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return fmt.Errorf("failed to create temporary file for %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		return fmt.Errorf("failed to write %s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("failed to write %s: %w", name, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("failed to set mode of %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("failed to sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("failed to close %s: %w", name, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("failed to rename %s into place: %w", name, err)
	}
	return syncDir(dir)
}

// syncDir syncs a directory, so that a rename or create in it is on disk.
func syncDir(dir string) error {
	if dir == "" {
		dir = "."
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("failed to open directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("failed to sync directory %s: %w", dir, err)
	}
	return nil
}
